"""A small Python API: run one operator on NumPy arrays, as `refinterp eval` does.

    from refinterp.api import run_operator
    out = run_operator("nn.conv", {"input": x, "filter": w}, {"stride": [2, 2]})
    out["output"]

Tests and tools use it to invoke standard-library operators; a diagnostic is raised as a
`refinterp.diagnostics.Diagnostic`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

import numpy as np

from . import semantics
from .arrays import canonical
from .compose import Executor, tensor_info
from .diagnostics import Diagnostic
from .instance import Invocation
from .lower.engines import DEFAULT_ENGINE, ENGINES
from .modules import Loader, Program
from .values import NULL

_PROGRAMS: dict[tuple[str, str | None], Program] = {}


def _canonical(array: Any) -> Any:
    """An input in refinterp's representation; a list (pack) item by item."""
    if isinstance(array, (list, tuple)):
        return [_canonical(a) for a in array]
    return canonical(array)


def load_program(file: str | Path, stdlib: str | Path | None = None) -> Program:
    """Load (and cache) a module file or model folder with its imports."""
    key = (str(Path(file).resolve()), None if stdlib is None else str(stdlib))
    if key not in _PROGRAMS:
        _PROGRAMS[key] = Loader(stdlib=stdlib).load(file)
    return _PROGRAMS[key]


def run_operator(name: str, inputs: Mapping[str, Any], attributes: Mapping[str, Any] | None = None,
                 *, generics: tuple[str, ...] = (), file: str | Path | None = None,
                 profile: str = "spec", engine: str = DEFAULT_ENGINE,
                 stdlib: str | Path | None = None) -> dict[str, Any]:
    """Run operator `name` and return its outputs by name (a pack as a list of arrays).

    `name` is `module.operator` for a standard-library operator (`nn.conv`, `math.add`), or an
    operator of `file` when `file` is given. Attribute values are Python values as the
    expression evaluator holds them (int, float, bool, str, tuples for packs, None is null)."""
    if file is None:
        module, _, operator = name.rpartition(".")
        if not module:
            raise ValueError("name a standard operator as module.operator, or pass file=")
        root = Path(stdlib) if stdlib is not None else Path(__file__).parent / "stdlib"
        file = root / Path(*module.split(".")).with_suffix(".sknd")
    else:
        operator = name
    program = load_program(file, stdlib)
    definition = next((d for d in program.main.tree.definitions if d.name == operator), None)
    if definition is None:
        raise Diagnostic(f"no operator '{operator}' in {program.main.path}")
    arrays = {k: _canonical(v) for k, v in inputs.items()}
    values = {k: _attribute(v) for k, v in (attributes or {}).items()}
    active = semantics.PROFILES[profile]
    invocation = Invocation(values, {k: tensor_info(v) for k, v in arrays.items()}, generics,
                            active)
    executor = Executor(program, active, engine=ENGINES[engine])
    return executor.run(definition, program.main, invocation, arrays)


def _attribute(value: Any) -> Any:
    """Python None is SkriptND null; a list is a pack (a tuple)."""
    if value is None:
        return NULL
    if isinstance(value, (list, tuple)):
        return tuple(_attribute(v) for v in value)
    return value
