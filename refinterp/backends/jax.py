"""JAX (XLA) as a harness back end on the Nx contract: each `nx.<op>` case run with
`jax.lax` / `jax.numpy` / `jax.extend.random` on the CPU, 64-bit enabled (float64 / int64 /
bool) (docs/backends.md, "JAX (XLA) on the Nx contract"). `JaxBackend` (`jax`) dispatches
each JAX call eagerly (one XLA computation per call); `JaxJitBackend` (`jax-jit`) compiles each
case's whole translation with `jax.jit` (the two differ only where eager dispatch skips a
check, see the docs).

The translations live in `jax_math` (element-wise, reductions, scans, sort), `jax_layout`
(creation, movement, cast, gather / scatter, unfold / fold, threefry) and `jax_linalg`
(matmul, FFT family, factorisations), each registering into `jax_common.TABLE`; every one
states its attribute mapping (nx attribute -> JAX argument) in its docstring. A case whose
attribute values JAX cannot express raises `Unsupported` (a skip), never an approximation.
Only `nx.*` operators are translated: model cases and the other stdlib modules are
unsupported.

Inputs reach JAX as the harness gives them, strided NumPy views included (layout variants):
`jnp.asarray` reads the view itself. A typed case (case.json `types`, docs/nx.md "Typed
evaluation") runs in its Nx types: each typed input converted to its JAX dtype (int8 ...
bfloat16), so JAX computes at that width and precision. An error case passes when JAX
raises; a case JAX computes although the contract forbids it fails as `accepted-invalid` (JAX
makes no such check: a finding, not a bug of the translation).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from refinterp.harness.backends import Unsupported
from refinterp.harness.suite import Case

INSTALL_HINT = "jax is not installed: pip install -e '.[jax]'"


def _load() -> Any:
    """The translation table: imports jax (the framework; this module is
    refinterp.backends.jax), enables 64-bit types before any computation, then the
    translation modules."""
    try:
        import jax  # noqa: F401  (absolute import: the top-level package)
    except ImportError:
        raise Unsupported(INSTALL_HINT) from None
    jax.config.update("jax_enable_x64", True)
    from refinterp.backends import jax_layout, jax_linalg, jax_math  # noqa: F401
    from refinterp.backends.jax_common import TABLE
    return TABLE


class JaxBackend:
    """The harness back end `jax` (entry point `refinterp.backends`): every JAX call of a
    translation dispatched eagerly (`jit = False`)."""

    name = "jax"
    profile = "spec"
    requires = ("jax",)  # the modules it needs (harness.backends.resolve)
    jit = False

    def prepare(self, case: Case) -> "_Runner":
        """The runner of `case`, or Unsupported for a model case / a non-nx operator."""
        table = _load()
        if case.operator is None:
            raise Unsupported("model cases are not translated (the jax back end maps single "
                              "nx operators)")
        if case.operator not in table:
            raise Unsupported(f"no jax translation of {case.operator} (the jax back end "
                              f"maps the nx module only)")
        function, outputs = table[case.operator]
        return _Runner(case, function, outputs, self.jit)


class JaxJitBackend(JaxBackend):
    """The same translations, each compiled whole by `jax.jit` (one XLA computation per
    case, attributes static): `--backend jax-jit`."""

    name = "jax:jit"
    jit = True


# accepted back-end specs of earlier releases (refinterp.backends.jax:Backend, :JitBackend)
Backend = JaxBackend
JitBackend = JaxJitBackend


class _Runner:
    def __init__(self, case: Case, function: Any, outputs: tuple[str, ...],
                 jit: bool = False) -> None:
        self.case, self.function, self.outputs, self.jit = case, function, outputs, jit

    def run(self, inputs: dict[str, Any]) -> dict[str, Any]:
        """Run the translation on `inputs` (NumPy arrays or views, packs as lists)."""
        import jax

        from refinterp.backends.jax_common import Call

        types = dict(self.case.manifest.get("types") or {})
        arrays = {name: [to_jax(v) for v in value] if isinstance(value, list)
                  else to_jax(value, types.get(name)) for name, value in inputs.items()}
        attributes = dict(self.case.attributes)
        generics = list(self.case.manifest.get("generics") or [])

        def translate(values: dict[str, Any]) -> Any:
            return self.function(Call(attributes, values, generics, types))
        result = (jax.jit(translate) if self.jit else translate)(arrays)
        if len(self.outputs) == 1:
            result = (result,)
        return {name: [to_numpy(v) for v in value] if isinstance(value, (list, tuple))
                else to_numpy(value) for name, value in zip(self.outputs, result)}


def to_jax(array: Any, nx_type: str | None = None) -> Any:
    """A NumPy array (possibly a strided view) as a JAX array of the same dtype, or of the
    Nx type `nx_type` of a typed case (whose golden inputs hold values of that type, so the
    conversion is exact): JAX itself reads the view (no copy made here)."""
    import jax.numpy as jnp

    if nx_type is not None:
        from refinterp.backends.jax_common import NX_DTYPES
        return jnp.asarray(array, dtype=NX_DTYPES[nx_type])
    return jnp.asarray(array)


def to_numpy(array: Any) -> np.ndarray:
    """A JAX array as a NumPy array (a copy)."""
    return np.array(array)
