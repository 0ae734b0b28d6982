"""The engines that run @lower blocks, by name (`refinterp eval --engine NAME`,
`api.evaluate(engine=NAME)`).

Every engine is a function `(instance, inputs, profile) -> outputs` with the contract of
`refinterp.lower.reference.run_reference`: the reference is the definition, every other engine
must compute the same function (docs/performance.md, "The vector engine"):

- `reference`: element by element in pure Python, each formula as closures (the definition);
- `compiled`: each formula as generated Python source where it can be (bit for bit the
  reference's results), else on the reference (refinterp.lower.compiled);
- `vector`: whole-array NumPy (refinterp.lower.vector); a formula it cannot run exactly runs on
  the compiled engine;
- `auto` (the default): per operator, the engine of `compiled` and `vector` that a cost model
  expects to be faster (`choose`); both are exact (the vector engine within the engines'
  tolerance), so the choice changes the time, never the result beyond that tolerance.

What a formula costs against `--max-lower-iterations` depends on the engine that runs it
(`lower_cost`, docs/limits.md "@lower iterations, counted by engine"): a tenth per iteration
(CONTRACTION_DISCOUNT) for a contraction the vector engine runs, one per iteration otherwise.

`scalar`, the compiled engine's name before the reference could be chosen on its own, is still
accepted (`ENGINE_ALIASES`) but not listed in `ENGINE_NAMES`.

The cost model uses only what is known before running: each formula's iteration count, the
axes the vector engine must run one value at a time (a formula reading its own output: argmax's
`:=`), and whether the vector engine refuses the formula outright (a counted dynamic extent, an
update reading its own output, too few cells per sequential step: it would run the compiled
engine anyway, after a wasted attempt). Its constants are the per-call fixed overhead and the
per-iteration cost of each engine, measured once on a 2-core machine (NumPy 2, CPython 3.11)
by timing stdlib operators of 6 to 266,000 iterations on both engines
(`tools/bench_engine_choice.py` prints them beside the estimates); only their ratios matter.
The compiled engine's fixed cost is generating and compiling a formula's code, once per
instance (`compiled.engine.compile_formula` keeps the kernel on the instance; a formula
compiled before costs only COMPILED_CACHED_US, making its closure); the vector engine's is
building the iteration space and checks, per formula and per sequential step.

The choice depends on the instance alone, never on the runs before it: `auto` must give the
same bits every time a program runs in a process (a golden made after other work equals one
made first), and the engines differ in the last bits of reordered sums. So the estimate always
counts the generation (COMPILED_FIXED_US), whether or not an earlier run made the code, and an
instance run many times is not switched to the compiled engine once its runs have paid for it
(a ski-rental rule was tried: a chain of 1,000 `real[8]` steps 135 -> 54 us per invocation, but
the same program's second and third runs gave different bits).
"""

from __future__ import annotations

import math
import sys
import weakref
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from refinterp.language.invocation import OperatorInstance
from refinterp.lower.common import REAL_ATOL, REAL_RTOL, Refused, facts_of, lowering_plan
from refinterp.lower.compiled.engine import run_compiled
from refinterp.lower.plan import Formula
from refinterp.lower.reference import run_reference
from refinterp.lower.vector.engine import FormulaReport, run_vector
from refinterp.lower.vector.space import (DEFAULT_MAX_MEMORY, MIN_CELLS_PER_STEP, FormulaFacts,
                                          contraction_box, scalar_axes, vector_facts)
from refinterp.numeric import rules

__all__ = ["COMPILED_CACHED_US", "COMPILED_FIXED_US", "COMPILED_ITERATION_US",
           "COMPILED_UPDATE_ITERATION_US", "DEFAULT_ENGINE", "DEFAULT_MAX_MEMORY",
           "ENGINES", "ENGINE_ALIASES", "ENGINE_NAMES", "REAL_ATOL", "REAL_RTOL",
           "VECTOR_FIXED_US", "VECTOR_ITERATION_US", "VECTOR_STEP_US", "Choice", "Engine",
           "CONTRACTION_DISCOUNT", "Log", "choose", "describe", "difference", "iterations",
           "lower_cost", "make_engine"]

Engine = Callable[[OperatorInstance, dict[str, Any], rules.Profile], dict[str, Any]]
Log = Callable[[OperatorInstance, str], None]  # (operator instance, engine description)
# (instance, inputs, profile, max_memory, tell) -> (outputs, how it ran if `tell`, else "")
Run = Callable[[OperatorInstance, dict[str, Any], rules.Profile, int, bool],
               tuple[dict[str, Any], str]]

ENGINE_NAMES = ("reference", "compiled", "vector", "auto")
ENGINE_ALIASES = {"scalar": "compiled"}  # accepted (old scripts), not listed
DEFAULT_ENGINE = "auto"

# The cost model of `auto` (microseconds; see the module docstring for how they were measured)
COMPILED_FIXED_US = 400.0        # per formula: generate, fold and compile its code
COMPILED_CACHED_US = 20.0        # per formula whose code the instance has compiled before
COMPILED_ITERATION_US = 0.09     # per iteration of generated code: `=`, `:=`
COMPILED_UPDATE_ITERATION_US = 0.05  # an update (`+=`, ...): its cell kept in a local
VECTOR_FIXED_US = 130.0          # per formula: iteration space, masks, stores
VECTOR_STEP_US = 120.0           # per value of the axes run one value at a time
VECTOR_ITERATION_US = 0.02       # per iteration, whole-array NumPy
# What an iteration costs against --max-lower-iterations (docs/limits.md, "@lower iterations,
# counted by engine"): one unit, except an iteration of a formula the vector engine runs as one
# contraction (BLAS: matmul, linear, convolution), which counts 1/CONTRACTION_DISCOUNT of one
# (measured: 6*10^8 to 10^10 such iterations per second, against 10^8 for the vector engine's
# element-wise paths and 10^7 for the compiled engine's)
CONTRACTION_DISCOUNT = 10


def _reference(instance: OperatorInstance, inputs: dict[str, Any], profile: rules.Profile,
               max_memory: int, tell: bool) -> tuple[dict[str, Any], str]:
    return run_reference(instance, inputs, profile), "reference" if tell else ""


def _compiled(instance: OperatorInstance, inputs: dict[str, Any], profile: rules.Profile,
              max_memory: int, tell: bool) -> tuple[dict[str, Any], str]:
    report: list[str] | None = [] if tell else None
    outputs = run_compiled(instance, inputs, profile, report)
    return outputs, "; ".join(["compiled", *(report or [])]) if tell else ""


def _vector(instance: OperatorInstance, inputs: dict[str, Any], profile: rules.Profile,
            max_memory: int, tell: bool) -> tuple[dict[str, Any], str]:
    reports: list[FormulaReport] = []
    outputs = run_vector(instance, inputs, profile, max_memory, reports)
    return outputs, describe(reports) if tell else ""


RUNS: dict[str, Run] = {"reference": _reference, "compiled": _compiled, "vector": _vector}


def make_engine(name: str = DEFAULT_ENGINE, max_memory: int = DEFAULT_MAX_MEMORY,
                log: Log | None = None) -> Engine:
    """The engine called `name` (one of ENGINE_NAMES, or an alias of one); `max_memory`
    bounds the vector engine's temporaries (bytes); `log`, if given, is told which engine ran
    each operator and, for `auto`, why (`--verbose`)."""
    name = ENGINE_ALIASES.get(name, name)
    if name not in ENGINE_NAMES:
        raise ValueError(f"unknown engine '{name}'; choose one of {', '.join(ENGINE_NAMES)}")
    tell = log is not None

    if name == "auto":
        def auto(instance: OperatorInstance, inputs: dict[str, Any],
                 profile: rules.Profile) -> dict[str, Any]:
            choice = choose(instance, inputs)
            outputs, how = RUNS[choice.engine](instance, inputs, profile, max_memory, tell)
            if log is not None:
                log(instance, f"auto chose {choice.engine} ({choice.reason}): {how}")
            return outputs
        _ENGINE_NAME[auto] = name
        return auto

    run = RUNS[name]

    def engine(instance: OperatorInstance, inputs: dict[str, Any],
               profile: rules.Profile) -> dict[str, Any]:
        outputs, how = run(instance, inputs, profile, max_memory, tell)
        if log is not None:
            log(instance, how)
        return outputs
    _ENGINE_NAME[engine] = name
    return engine


_UNREAD = np.empty(0)  # an array not made yet, where only its being an array matters

# the name each engine made by `make_engine` was made with (an engine of the caller's own is
# not here: its formulas count every iteration, `lower_cost`)
_ENGINE_NAME: "weakref.WeakKeyDictionary[Engine, str]" = weakref.WeakKeyDictionary()


def lower_cost(engine: Engine, instance: OperatorInstance, formula: Formula,
               inputs: dict[str, Any]) -> int:
    """What `formula` of `instance` costs against `--max-lower-iterations` when `engine` runs
    it on `inputs` (their values do not matter, only which are arrays and which packs; the
    instance's variables, constants and outputs need not be made yet): its iteration count,
    or that count divided by CONTRACTION_DISCOUNT (rounded up) when the engine is `vector`,
    or `auto` choosing vector, and the vector engine runs the formula as a contraction
    (`contraction_box`, which sees only which names are arrays).
    Known before running, so the check keeps its guarantee: a formula that would run one
    iteration at a time (reference, compiled, a refused or sequential formula) counts each."""
    count = formula.iterations()
    name = _ENGINE_NAME.get(engine)
    if name == "auto":
        name = choose(instance, inputs).engine
    formulas = lowering_plan(instance).formulas
    position = next((k for k, f in enumerate(formulas) if f is formula), None)
    info = instance.outputs.get(formula.output)
    if name != "vector" or position is None or getattr(info, "dtype", None) != "real":
        return count
    facts = vector_facts(instance)[position]
    # the names the engine's arrays will have (`common.lowering_arrays`): what is an array,
    # what a pack, is all the form of a contraction depends on
    made = {**instance.variables, **{n: i for n, (i, _) in instance.constants.items()},
            **instance.outputs}
    arrays = {**inputs, **{n: [] if isinstance(i, tuple) else _UNREAD
                           for n, i in made.items()}}
    try:
        scalar = scalar_axes(facts, arrays)
    except Refused:
        return count
    # the form of a contraction, whatever its memory: one that does not fit `--max-memory`
    # runs as a contraction per box (a 64-channel 224x224 convolution: 3 s in 2 GiB)
    if formula.counted is not None or \
            contraction_box(facts, arrays, scalar, sys.maxsize) is None:
        return count
    return -(-count // CONTRACTION_DISCOUNT)


@dataclass(frozen=True)
class Choice:
    """What `auto` runs an operator on, and why (`--verbose`)."""

    engine: str                      # "compiled" or "vector"
    reason: str
    compiled_us: float               # the estimated times of both engines, microseconds
    vector_us: float


def choose(instance: OperatorInstance, inputs: dict[str, Any]) -> Choice:
    """The engine expected to run the @lower block of `instance` faster, from what is known
    before running (the cost model in the module docstring): per formula, the compiled engine
    costs COMPILED_FIXED_US (its code's generation, counted even when an earlier run made it) +
    COMPILED_ITERATION_US per iteration (COMPILED_UPDATE_ITERATION_US for an update); the
    vector engine VECTOR_FIXED_US + VECTOR_STEP_US per sequential step + VECTOR_ITERATION_US
    per iteration, or, for a formula it refuses, its fixed cost and then the compiled
    engine's. Ties go to the vector engine."""
    plan = lowering_plan(instance)
    compiled_us, vector_us, refusals = _estimates(instance, inputs)
    engine = "compiled" if compiled_us < vector_us else "vector"
    reason = f"estimated {_ms(vector_us)} vector, {_ms(compiled_us)} compiled"
    if all(refused is not None for refused in refusals) and refusals:
        reason = "; ".join(f"the vector engine refuses the formula at line "
                           f"{formula.node.span.line}: {refused}"
                           for formula, refused in zip(plan.formulas, refusals))
    return Choice(engine, reason, compiled_us, vector_us)


def _estimates(instance: OperatorInstance, inputs: dict[str, Any]
               ) -> tuple[float, float, tuple[str | None, ...]]:
    """The estimated times of the compiled and the vector engine, and per formula why the
    vector engine refuses it (None: it does not) — choose's cost model. They depend on the
    instance and on which inputs are packs only, so they are worked out once per instance
    and kept (`InstanceFacts.estimates`)."""
    packs = frozenset(name for name, value in inputs.items() if isinstance(value, list))
    kept = facts_of(instance).estimates
    found = kept.get(packs)
    if found is not None:
        return found
    compiled_us = vector_us = 0.0
    refusals: list[str | None] = []
    for formula, known in zip(lowering_plan(instance).formulas, vector_facts(instance)):
        n = formula.iterations()
        per_iteration = COMPILED_ITERATION_US if formula.op in ("=", ":=") else \
            COMPILED_UPDATE_ITERATION_US
        on_compiled = COMPILED_FIXED_US + per_iteration * n  # generation included: the
        # choice must not depend on whether an earlier run made the code (module docstring)
        steps, refused = _sequential_steps(formula, known, inputs)
        compiled_us += on_compiled
        refusals.append(refused)
        if refused is not None:
            vector_us += VECTOR_FIXED_US + on_compiled
        else:
            vector_us += VECTOR_FIXED_US + VECTOR_STEP_US * steps + VECTOR_ITERATION_US * n
    found = kept[packs] = (compiled_us, vector_us, tuple(refusals))
    return found


def _sequential_steps(formula: Formula, facts: FormulaFacts, inputs: dict[str, Any]
                      ) -> tuple[int, str | None]:
    """How many steps the vector engine runs `formula` in (the values of the axes it takes one
    at a time; 0 if it takes none so), or why it refuses the formula before running it (the
    checks of refinterp.lower.vector.engine.VectorFormula.run that need no values)."""
    if formula.counted is not None:
        return 0, f"it counts the dynamic extent '{formula.counted.name}'"
    try:
        sequential = scalar_axes(facts, inputs)
    except Refused as why:
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
    """'vector', or which formulas fell back to the compiled engine and why."""
    fallbacks = [f"formula at line {r.formula.node.span.line}: {r.engine} ({r.reason})"
                 for r in reports if r.engine != "vector"]
    if not fallbacks:
        return "vector"
    return "vector; " + "; ".join(fallbacks)


ENGINES: dict[str, Engine] = {name: make_engine(name) for name in ENGINE_NAMES}


def difference(expected: Any, actual: Any, name: str = "output") -> str | None:
    """None if two engines' outputs agree within the tolerance (REAL_RTOL, REAL_ATOL), else
    what differs."""
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
