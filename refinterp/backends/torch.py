"""PyTorch as a harness back end: each stdlib operator case run with eager `torch` /
`torch.nn.functional` on CPU, in float64 / int64 / bool (docs/backends.md, "PyTorch").

The translations live in `torch_math` (math, linalg, misc), `torch_layout` (layout) and
`torch_nn` (nn, image, algo, quant), each registering into `torch_common.TABLE`; every one
writes its attribute mapping (SkriptND attribute -> torch argument) next to it. A case whose
operator or attribute values torch cannot express raises `Unsupported` (a skip), never an
approximate translation. Model cases are unsupported (this back end translates operators).

An error case passes when torch raises (any exception from `run`); a case torch computes
although SkriptND rejects it fails as `accepted-invalid` -- that is a finding, not a bug.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from refinterp.harness.backends import Unsupported
from refinterp.harness.suite import Case

INSTALL_HINT = "torch is not installed: pip install -e '.[torch]'"


def _load() -> Any:
    """The translation table, importing torch (absolute import: the framework, not this
    module) and the translation modules on first use."""
    try:
        import torch  # noqa: F401  (the top-level package; this module is refinterp.backends.torch)
    except ImportError:
        raise Unsupported(INSTALL_HINT) from None
    from refinterp.backends import torch_image, torch_layout, torch_math, torch_nn  # noqa: F401
    from refinterp.backends.torch_common import TABLE
    return TABLE


class TorchBackend:
    """The harness back end `torch` (entry point `refinterp.backends`)."""

    name = "torch"
    profile = "spec"
    requires = ("torch",)  # the modules it needs (harness.backends.resolve)

    def prepare(self, case: Case) -> "_Runner":
        """The runner of `case`, or Unsupported for a model case / an unmapped operator."""
        table = _load()
        if case.operator is None:
            raise Unsupported("model cases are not translated (the torch back end maps single "
                              "stdlib operators)")
        if case.operator not in table:
            raise Unsupported(f"no torch translation of {case.operator}")
        function, outputs = table[case.operator]
        return _Runner(case, function, outputs)


# accepted back-end spec of earlier releases (refinterp.backends.torch:Backend)
Backend = TorchBackend


class _Runner:
    def __init__(self, case: Case, function: Any, outputs: tuple[str, ...]) -> None:
        self.case, self.function, self.outputs = case, function, outputs

    def run(self, inputs: dict[str, Any]) -> dict[str, Any]:
        """Run the translation on `inputs` (NumPy arrays, packs as lists)."""
        import torch
        from refinterp.backends.torch_common import Call

        tensors = {name: [to_torch(v) for v in value] if isinstance(value, list)
                   else to_torch(value) for name, value in inputs.items()}
        call = Call(dict(self.case.attributes), tensors,
                    list(self.case.manifest.get("generics") or []))
        deterministic = torch.are_deterministic_algorithms_enabled()
        torch.use_deterministic_algorithms(True)  # scatter with repeated indices: last wins
        try:
            with torch.no_grad():
                result = self.function(call)
        finally:
            torch.use_deterministic_algorithms(deterministic)
        if len(self.outputs) == 1:
            result = (result,)
        return {name: [to_numpy(v) for v in value] if isinstance(value, (list, tuple))
                else to_numpy(value) for name, value in zip(self.outputs, result)}


def to_torch(array: Any) -> Any:
    """A NumPy array as a CPU tensor of the harness dtypes (float64, int64, bool)."""
    import torch

    array = np.asarray(array)
    if array.dtype.kind == "f":
        array = array.astype(np.float64)
    elif array.dtype.kind in "iu":
        array = array.astype(np.int64)
    return torch.from_numpy(np.array(array, order="C", copy=True))  # keeps rank 0


def to_numpy(tensor: Any) -> np.ndarray:
    """A tensor (or a Python number) as a NumPy array."""
    import torch

    if isinstance(tensor, torch.Tensor):
        return tensor.detach().cpu().numpy().copy()
    return np.asarray(tensor)
