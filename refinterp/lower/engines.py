"""The engines that run @lower blocks, by name (`refinterp eval --engine NAME`).

Every engine is a function `(instance, inputs, profile) -> outputs` with the contract of
`refinterp.lower.scalar.run_lowering`: the scalar engine is the definition, every other engine
must compute the same function (docs/architecture.md, "The vector engine"):

- `scalar`: element by element in pure Python (the definition);
- `vector`: whole-array NumPy (refinterp.lower.vector); a formula it cannot run exactly runs
  on the scalar engine;
- `auto` (the default): per operator, the engine a cost model expects to be faster
  (`choose`); both are exact (the vector engine within the engines' tolerance), so the choice
  changes the time, never the result beyond that tolerance.

The cost model uses only what is known before running: each formula's iteration count, the
axes the vector engine must run one value at a time (a formula reading its own output: argmax's
`:=`), and whether the vector engine refuses the formula outright (a counted dynamic extent, an
update reading its own output, too few cells per sequential step: it would run the scalar
engine anyway, after a wasted attempt). Its constants are the per-call fixed overhead and the
per-iteration cost of each engine, measured once on a 2-core machine (NumPy 2, CPython 3.11)
by timing stdlib operators of 6 to 266,000 iterations on both engines
(`tools/bench_engine_choice.py` prints them beside the estimates); only their ratios matter. The scalar engine's fixed cost is generating and compiling a formula's code, once per
instance (`codegen.compile_formula` keeps the kernel on the instance): a formula compiled
before costs SCALAR_COMPILED_US (making its runner, reading the arrays as lists); the vector
engine's is building the iteration space and checks, per formula and per sequential step.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from refinterp.numeric import rules
from refinterp.language.invocation import OperatorInstance
from refinterp.lower.codegen import is_compiled
from refinterp.lower.plan import Formula, derived, lowering_plan
from refinterp.lower.scalar import run_lowering
from refinterp.lower.vector import DEFAULT_MAX_MEMORY, FormulaReport, run_vector
from refinterp.lower.vector_space import MIN_CELLS_PER_STEP, Fallback, FormulaFacts, scalar_axes

Engine = Callable[[OperatorInstance, dict[str, Any], rules.Profile], dict[str, Any]]
Log = Callable[[OperatorInstance, str], None]  # (operator instance, engine description)

ENGINE_NAMES = ("scalar", "vector", "auto")
DEFAULT_ENGINE = "auto"

# The cost model of `auto` (microseconds; see the module docstring for how they were measured)
SCALAR_FIXED_US = 400.0          # per formula: generate, fold and compile its code
SCALAR_COMPILED_US = 20.0        # per formula whose code the instance has compiled before
SCALAR_ITERATION_US = 0.09       # per iteration of generated code: `=`, `:=`
SCALAR_UPDATE_ITERATION_US = 0.05  # an update (`+=`, ...): its cell kept in a local
VECTOR_FIXED_US = 130.0          # per formula: iteration space, masks, stores
VECTOR_STEP_US = 120.0           # per value of the axes run one value at a time
VECTOR_ITERATION_US = 0.02       # per iteration, whole-array NumPy


def make_engine(name: str = DEFAULT_ENGINE, max_memory: int = DEFAULT_MAX_MEMORY,
                log: Log | None = None) -> Engine:
    """The engine called `name`; `max_memory` bounds the vector engine's temporaries (bytes);
    `log`, if given, is told which engine ran each operator and, for `auto`, why
    (`--verbose`)."""
    if name not in ENGINE_NAMES:
        raise ValueError(f"unknown engine '{name}'; choose one of {', '.join(ENGINE_NAMES)}")

    def auto(instance: OperatorInstance, inputs: dict[str, Any],
             profile: rules.Profile) -> dict[str, Any]:
        choice = choose(instance, inputs)
        run = scalar_run if choice.engine == "scalar" else vector_run
        outputs, how = run(instance, inputs, profile, log is not None)
        if log is not None:
            log(instance, f"auto chose {choice.engine} ({choice.reason}): {how}")
        return outputs

    def vector(instance: OperatorInstance, inputs: dict[str, Any],
               profile: rules.Profile) -> dict[str, Any]:
        outputs, how = vector_run(instance, inputs, profile, log is not None)
        if log is not None:
            log(instance, how)
        return outputs

    def scalar(instance: OperatorInstance, inputs: dict[str, Any],
               profile: rules.Profile) -> dict[str, Any]:
        outputs, how = scalar_run(instance, inputs, profile, log is not None)
        if log is not None:
            log(instance, how)
        return outputs

    def vector_run(instance: OperatorInstance, inputs: dict[str, Any], profile: rules.Profile,
                   tell: bool) -> tuple[dict[str, Any], str]:
        reports: list[FormulaReport] = []
        outputs = run_vector(instance, inputs, profile, max_memory, reports)
        return outputs, describe(reports) if tell else ""

    def scalar_run(instance: OperatorInstance, inputs: dict[str, Any], profile: rules.Profile,
                   tell: bool) -> tuple[dict[str, Any], str]:
        report: list[str] | None = [] if tell else None
        outputs = run_lowering(instance, inputs, profile, report=report)
        return outputs, "; ".join(["scalar", *(report or [])]) if tell else ""

    return {"scalar": scalar, "vector": vector, "auto": auto}[name]


@dataclass(frozen=True)
class Choice:
    """What `auto` runs an operator on, and why (`--verbose`)."""

    engine: str                      # "scalar" or "vector"
    reason: str
    scalar_us: float                 # the estimated times of both engines, microseconds
    vector_us: float


def choose(instance: OperatorInstance, inputs: dict[str, Any]) -> Choice:
    """The engine expected to run the @lower block of `instance` faster, from what is known
    before running (the cost model in the module docstring): per formula, the scalar engine
    costs SCALAR_FIXED_US (SCALAR_COMPILED_US once its code is compiled for the instance) +
    SCALAR_ITERATION_US per iteration (SCALAR_UPDATE_ITERATION_US for an update); the vector
    engine
    VECTOR_FIXED_US + VECTOR_STEP_US per sequential step + VECTOR_ITERATION_US per iteration,
    or, for a formula it refuses, its fixed cost and then the scalar engine's. Ties go to the
    vector engine."""
    plan = lowering_plan(instance)
    facts = derived(instance, "vector facts",  # shared with refinterp.lower.vector.run_vector
                    lambda: tuple(FormulaFacts(f) for f in plan.formulas))
    scalar_us = vector_us = 0.0
    refusals: list[str] = []
    for formula, known in zip(plan.formulas, facts):
        n = formula.iterations()
        fixed = SCALAR_COMPILED_US if is_compiled(instance, formula) else SCALAR_FIXED_US
        per_iteration = SCALAR_ITERATION_US if formula.op in ("=", ":=") else \
            SCALAR_UPDATE_ITERATION_US
        on_scalar = fixed + per_iteration * n
        steps, refused = _sequential_steps(formula, known, inputs)
        scalar_us += on_scalar
        if refused is not None:
            vector_us += VECTOR_FIXED_US + on_scalar
            refusals.append(f"the vector engine refuses the formula at line "
                            f"{formula.node.span.line}: {refused}")
        else:
            vector_us += VECTOR_FIXED_US + VECTOR_STEP_US * steps + VECTOR_ITERATION_US * n
    engine = "scalar" if scalar_us < vector_us else "vector"
    reason = f"estimated {_ms(vector_us)} vector, {_ms(scalar_us)} scalar"
    if refusals and len(refusals) == len(plan.formulas):
        reason = "; ".join(refusals)
    return Choice(engine, reason, scalar_us, vector_us)


def _sequential_steps(formula: Formula, facts: FormulaFacts, inputs: dict[str, Any]
                      ) -> tuple[int, str | None]:
    """How many steps the vector engine runs `formula` in (the values of the axes it takes one
    at a time; 0 if it takes none so), or why it refuses the formula before running it (the
    checks of refinterp.lower.vector.VectorFormula.run that need no values)."""
    if formula.counted is not None:
        return 0, f"it counts the dynamic extent '{formula.counted.name}'"
    try:
        sequential = scalar_axes(facts, inputs)
    except Fallback as why:
        return 0, why.reason
    if not sequential:
        return 0, None
    steps = math.prod(facts.axes[a].size for a in sequential)
    total = math.prod(axis.size for axis in facts.axes)
    if facts.reads_output and steps and total // steps < MIN_CELLS_PER_STEP:
        return steps, "too few output cells per sequential step"
    return steps, None


def _ms(microseconds: float) -> str:
    return f"{microseconds / 1000:.2f} ms"


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
