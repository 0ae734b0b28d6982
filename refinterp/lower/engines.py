"""The engines that run @lower blocks, by name (`refinterp eval --engine NAME`).

Every engine is a function `(instance, inputs, profile) -> outputs` with the contract of
`refinterp.lower.scalar.run_lowering`: the scalar engine is the definition, every other engine
must compute the same function (docs/architecture.md, "The vector engine"):

- `scalar`: element by element in pure Python (the definition);
- `vector`: whole-array NumPy (refinterp.lower.vector); a formula it cannot run exactly runs
  on the scalar engine;
- `auto` (the default): the scalar engine for operators with a small iteration space (up to
  AUTO_SCALAR_ITERATIONS), where it is fast and exact by definition; the vector engine above.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from refinterp.numeric import rules
from refinterp.language.invocation import OperatorInstance
from refinterp.lower.plan import lowering_plan
from refinterp.lower.scalar import run_lowering
from refinterp.lower.vector import DEFAULT_MAX_MEMORY, FormulaReport, run_vector

Engine = Callable[[OperatorInstance, dict[str, Any], rules.Profile], dict[str, Any]]
Log = Callable[[OperatorInstance, str], None]  # (operator instance, engine description)

ENGINE_NAMES = ("scalar", "vector", "auto")
DEFAULT_ENGINE = "auto"
AUTO_SCALAR_ITERATIONS = 4096


def make_engine(name: str = DEFAULT_ENGINE, max_memory: int = DEFAULT_MAX_MEMORY,
                log: Log | None = None) -> Engine:
    """The engine called `name`; `max_memory` bounds the vector engine's temporaries (bytes);
    `log`, if given, is told which engine ran each operator (`--verbose`)."""
    if name not in ENGINE_NAMES:
        raise ValueError(f"unknown engine '{name}'; choose one of {', '.join(ENGINE_NAMES)}")

    def vector(instance: OperatorInstance, inputs: dict[str, Any],
               profile: rules.Profile) -> dict[str, Any]:
        reports: list[FormulaReport] = []
        outputs = run_vector(instance, inputs, profile, max_memory, reports)
        if log is not None:
            log(instance, describe(reports))
        return outputs

    def scalar(instance: OperatorInstance, inputs: dict[str, Any],
               profile: rules.Profile) -> dict[str, Any]:
        report: list[str] | None = [] if log is not None else None
        outputs = run_lowering(instance, inputs, profile, report=report)
        if log is not None:
            log(instance, "; ".join(["scalar", *(report or [])]))
        return outputs

    def auto(instance: OperatorInstance, inputs: dict[str, Any],
             profile: rules.Profile) -> dict[str, Any]:
        if iterations(instance) <= AUTO_SCALAR_ITERATIONS:
            return scalar(instance, inputs, profile)
        return vector(instance, inputs, profile)

    return {"scalar": scalar, "vector": vector, "auto": auto}[name]


def iterations(instance: OperatorInstance) -> int:
    """The number of iterations of all formulas of an instance's @lower block."""
    return sum(f.iterations() for f in lowering_plan(instance).formulas)


def describe(reports: list[FormulaReport]) -> str:
    """'vector', or which formulas fell back to the scalar engine and why."""
    fallbacks = [f"formula at line {r.formula.node.span.line}: scalar ({r.reason})"
                 for r in reports if r.engine != "vector"]
    if not fallbacks:
        return "vector"
    return "vector; " + "; ".join(fallbacks)


ENGINES: dict[str, Engine] = {name: make_engine(name) for name in ENGINE_NAMES}


# The documented tolerance between engines (docs/semantics.md, "Engines"): ints and bools are
# identical; reals agree to a relative 1e-9 plus an absolute 1e-12 (summation order, the last
# place of transcendental functions), with nan where the other has nan, the same infinities,
# and -0.0 equal to 0.0.
REAL_RTOL = 1e-9
REAL_ATOL = 1e-12


def difference(expected: Any, actual: Any, name: str = "output") -> str | None:
    """None if two engines' outputs agree within the tolerance, else what differs."""
    if isinstance(expected, list) or isinstance(actual, list):
        if not isinstance(expected, list) or not isinstance(actual, list) or \
                len(expected) != len(actual):
            return f"{name}: a pack on one side only, or packs of different lengths"
        for k, (e, a) in enumerate(zip(expected, actual)):
            found = difference(e, a, f"{name}[{k}]")
            if found:
                return found
        return None
    expected, actual = np.asarray(expected), np.asarray(actual)
    if expected.shape != actual.shape or expected.dtype != actual.dtype:
        return (f"{name}: {expected.dtype}{list(expected.shape)} vs "
                f"{actual.dtype}{list(actual.shape)}")
    if expected.dtype.kind == "f":
        close = np.isclose(actual, expected, rtol=REAL_RTOL, atol=REAL_ATOL, equal_nan=True)
    else:
        close = actual == expected
    if close.all():
        return None
    where = tuple(int(i) for i in np.argwhere(~close)[0])
    return f"{name}{list(where)}: {expected[where]!r} vs {actual[where]!r}"
