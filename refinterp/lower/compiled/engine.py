"""The compiled engine: each formula in the subset of the code generation (after partial
evaluation, `fold`) runs as generated Python source (`kernel.Generator`), compiled once per
instance and array layout and kept on the instance (`compile_formula`); a formula it refuses
runs on the reference (refinterp.lower.reference), which also reports the failing
subexpression and iteration of any error. The results equal the reference's exactly (same loop
order, same operations in the same order, same numeric rules: tests/lower/test_codegen.py).
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from refinterp.core.diagnostics import EngineDiagnostic
from refinterp.language.invocation import OperatorInstance
from refinterp.lower import reference
from refinterp.lower.common import (Refused, allocate_outputs, facts_of, lowered_outputs,
                                    lowering_arrays, lowering_plan)
from refinterp.lower.compiled.fold import fold_formula
from refinterp.lower.compiled.kernel import Generator, generate_source
from refinterp.lower.compiled.source import MAX_NESTING
from refinterp.lower.plan import INT64_MAX, INT64_MIN, Formula
from refinterp.lower.reference import FAILED, INT_OVERFLOW, OUT_OF_RANGE, failure
from refinterp.numeric import rules
from refinterp.syntax.visitor import nodes, tree_depth


def run_compiled(instance: OperatorInstance, inputs: dict[str, Any],
                 profile: rules.Profile = rules.SPEC, report: list[str] | None = None
                 ) -> dict[str, Any]:
    """Run the @lower block of `instance` on input arrays, each formula as generated code
    where it can be, else on the reference; return the output arrays (the reference's, bit
    for bit). `report` (if given) receives, per formula, `formula at line N: <how it ran>`."""
    plan = lowering_plan(instance)
    arrays = lowering_arrays(instance, inputs, allocate_outputs(instance, plan))
    for formula in plan.formulas:
        how: list[str] | None = [] if report is not None else None
        run_formula(instance, formula, arrays, profile, how)
        if report is not None:
            report.append(f"formula at line {formula.node.span.line}: "
                          f"{how[0] if how else 'reference'}")
    return lowered_outputs(instance, plan, arrays)


def run_formula(instance: OperatorInstance, formula: Formula, arrays: dict[str, Any],
                profile: rules.Profile, report: list[str] | None = None) -> None:
    """Run one formula as generated code, or on the reference where it is refused, updating
    its output in `arrays`."""
    fast = compile_formula(instance, formula, arrays, profile, report)
    if fast is None:
        reference.run_formula(instance, formula, arrays, profile)
        return
    try:
        fast()
    except EngineDiagnostic:
        # The generated kernel works on copies and wrote nothing: rerun the reference, which
        # reports the failing sub-expression and iteration ("at i = ..").
        reference.run_formula(instance, formula, arrays, profile)
        raise


class OutOfRange(Exception):
    """An unguarded index fell outside its tensor (raised by generated code)."""

    def __init__(self, access: int, position: tuple, indices: dict) -> None:
        super().__init__(access)
        self.access, self.position, self.indices = access, position, indices


class IntOverflow(Exception):
    def __init__(self, value: int) -> None:
        super().__init__(value)
        self.value = value


def _say(report: list[str] | None, how: str) -> None:
    if report is not None:
        report.append(how)


def _iteration(error: Exception, formula: Formula) -> dict | None:
    """The index values of the iteration in which the kernel raised `error`: its loop
    variables, read from the kernel's frame in the traceback (nothing is tracked per
    iteration)."""
    traceback = error.__traceback__
    while traceback is not None and traceback.tb_frame.f_code.co_name != "kernel":
        traceback = traceback.tb_next
    if traceback is None:
        return None
    variables = traceback.tb_frame.f_locals
    try:
        return {r.name: tuple(variables[f"I_{r.name}_{k}"] for k in range(len(r.bound)))
                if isinstance(r.bound, tuple) else variables[f"I_{r.name}"]
                for r in formula.indices}
    except KeyError:  # not in a loop yet
        return None


def compile_formula(instance: OperatorInstance, formula: Formula, arrays: dict[str, Any],
                    profile: rules.Profile, report: list[str] | None = None
                    ) -> Callable[[], None] | None:
    """A closure running `formula` as generated source on `arrays`, or None outside the
    supported subset; `report` (if given) receives how the formula runs and, for the
    reference, why. A failing iteration raises the reference's diagnostic
    (`reference.failure`), without the failing subexpression (`run_formula` reruns the
    reference for that).

    The source depends on the instance, the formula, the profile and the layout of the arrays
    (kinds, shapes, null inputs, pack lengths: never their values), so it is generated and
    compiled once per instance for each layout (`_compiled`, kept on the instance) and
    only the closure, which reads this run's arrays, is made per call: generating and
    compiling cost about 0.4 ms per formula, every invocation of an operator in a loop."""
    store = facts_of(instance).kernels
    # by id(formula): safe, the entry holds the formula (no other object has its id meanwhile)
    key = (id(formula), profile.name, _layout(arrays))
    entry = store.get(key)
    if entry is None or entry[0] is not formula:
        entry = (formula, *_compiled(instance, formula, arrays, profile))
        store[key] = entry
    _, messages, compiled = entry
    for message in messages:
        _say(report, message)
    if compiled is None:
        return None
    kernel, generator, names = compiled
    iterations = formula.iterations()

    def elements(array: np.ndarray, name: str) -> Any:
        """The elements of `array`, row-major, read as Python values: a list, or for an input
        larger than the formula's iteration count (which reads only part of it, as gather_nd
        does) a memoryview of it, read in place rather than copied (its items are the same
        Python floats, ints and bools)."""
        if name != formula.output and array.size > iterations and \
                array.dtype in (np.float64, np.int64, np.bool_):
            return memoryview(np.ascontiguousarray(array).reshape(-1))
        return array.ravel().tolist()

    def run() -> None:
        # a flat sequence per tensor, a list of them per pack of tensors
        flats = [[elements(a, name) for a in arrays[name]] if isinstance(arrays[name], list)
                 else elements(arrays[name], name) for name in names]
        try:
            kernel(generator.constants, OutOfRange, IntOverflow, INT64_MIN, INT64_MAX, *flats)
        except OutOfRange as error:
            node, message = generator.accesses[error.access]
            raise failure(node, message, error.indices, OUT_OF_RANGE) from None
        except IntOverflow as error:
            raise failure(formula.node, f"the int result {error.value} does not fit in int64",
                          _iteration(error, formula), INT_OVERFLOW) from None
        except rules.NumericError as error:
            raise failure(formula.node, error.message, _iteration(error, formula),
                          FAILED) from None
        output, target = flats[names.index(formula.output)], arrays[formula.output]
        pairs = zip(target, output) if isinstance(target, list) else [(target, output)]
        for array, flat in pairs:  # the output, or every item of an output pack
            array[...] = np.array(flat, dtype=array.dtype).reshape(array.shape)

    return run


def is_compiled(instance: OperatorInstance, formula: Formula) -> bool:
    """Whether `formula`'s code was generated for `instance` before (for some profile and
    layout): `auto`'s cost model then counts no generation (engines.choose)."""
    store = facts_of(instance).kernels
    return any(entry[0] is formula and entry[2] is not None for entry in store.values())


def _layout(arrays: dict[str, Any]) -> tuple:
    """What generated code may depend on of the arrays: per name, null, or the kind and
    shape of the array (of each array of a pack)."""
    def of(value: Any) -> Any:
        if isinstance(value, np.ndarray):
            return (value.dtype.str, value.shape)
        if isinstance(value, list):
            return tuple(of(item) for item in value)
        return type(value).__name__
    return tuple((name, of(value)) for name, value in arrays.items())


def _compiled(instance: OperatorInstance, formula: Formula, arrays: dict[str, Any],
              profile: rules.Profile) -> tuple[list[str], tuple | None]:
    """The messages `compile_formula` reports and (the kernel, its generator, the names of the
    tensors it reads in order), or None where the reference runs the formula."""
    messages: list[str] = []
    if formula.counted is not None:  # the reference counts the stores (plan.CountedExtent)
        messages.append(f"reference (it counts the dynamic extent '{formula.counted.name}')")
        return messages, None
    nesting = max(map(tree_depth, nodes((formula.value, formula.condition, formula.access,
                                    tuple(local.value for local in formula.locals)))))
    if nesting > MAX_NESTING:
        messages.append(f"reference (nested {nesting} deep, above {MAX_NESTING})")
        return messages, None
    generator = Generator(instance, formula, arrays, profile)
    how = "generated code"
    try:
        source = generate_source(generator)
    except Refused as refused:
        # a rank-polymorphic or configurable formula: fold what the instance decides (packed
        # indices, selects on attributes, optional operands) and try again
        reasons = [f"not generated: {refused}"]
        try:
            folded = fold_formula(instance, formula, arrays, profile, reasons)
        except RecursionError:
            folded, reasons = None, reasons + ["nested too deeply"]
        if folded is None:
            messages.append(f"reference ({reasons[0]}; not folded: {reasons[-1]})")
            return messages, None
        generator = Generator(instance, folded, arrays, profile)
        try:
            source = generate_source(generator)
        except Refused as still:
            messages.append(f"reference ({reasons[0]}; folded, still not generated: {still})")
            return messages, None
        how = "generated code after folding"
    namespace: dict[str, Any] = {}
    try:
        code = compile(source, f"<formula {formula.node.span}>", "exec")
    except (SyntaxError, RecursionError) as error:  # nested too deeply for Python
        messages.append(f"reference (generated code does not compile: {error})")
        return messages, None
    messages.append(how)
    exec(code, namespace)
    generator.arrays = {}  # kept with the kernel: it must not keep this run's arrays alive
    return messages, (namespace["kernel"], generator, list(generator.tensors))

