"""The vector engine's entry point: `run_vector` runs a lowering plan (plan.py) with whole-array
NumPy operations, each formula box by box (docs/performance.md, "The vector engine").

It computes the function the reference defines (refinterp.lower.reference), formula by formula.
A formula reading its own output (`:=` under a condition, as in argmax) runs its reduced axes
one step at a time (outermost), vectorised over the output cells, which are independent.

Anything it cannot do exactly — an error the reference would report, an int that may leave
int64, an iteration-order dependence it cannot prove harmless — raises `Refused`, and that one
formula runs on the compiled engine instead (generated code, else the reference: never a wrong
answer). Reals may differ from the reference by summation order and the last place of
transcendental functions; ints and bools are identical (docs/semantics.md, "Engines").
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from refinterp.language.invocation import OperatorInstance, TensorType
from refinterp.lower.common import (Refused, allocate_outputs, facts_of, lowered_outputs,
                                    lowering_arrays, lowering_plan)
from refinterp.lower.compiled.engine import run_formula
from refinterp.lower.plan import Formula, allocation_shape, output_kind
from refinterp.lower.vector.access import Inputs, Read
from refinterp.lower.vector.evaluation import BoxEvaluator, FormulaContext, truth
from refinterp.lower.vector.space import (DEFAULT_MAX_MEMORY, MIN_CELLS_PER_STEP, Box, Boxes,
                                          FormulaFacts, Mask, anywhere, both, contraction_box,
                                          plan_boxes, scalar_axes, vector_facts)
from refinterp.lower.vector.stores import Stores
from refinterp.numeric import rules
from refinterp.numeric.representation import NUMPY_DTYPES
from refinterp.syntax import ast

__all__ = ["DEFAULT_MAX_MEMORY", "FormulaReport", "VectorFormula", "fresh_outputs",
           "run_vector"]

Fresh = dict[str, tuple[int, tuple[int, ...], Any]]  # output -> (first writer, shape, dtype)


@dataclass
class FormulaReport:
    """How one formula ran: 'vector', or 'compiled' with the reason of the fallback."""

    formula: Formula
    engine: str
    reason: str = ""


def run_vector(instance: OperatorInstance, inputs: dict[str, Any],
               profile: rules.Profile = rules.SPEC,
               max_memory: int = DEFAULT_MAX_MEMORY,
               reports: list[FormulaReport] | None = None) -> dict[str, Any]:
    """Run the @lower block of `instance` vectorised; the same contract as
    reference.run_reference. Each formula the vector engine refuses runs on the compiled
    engine; `reports` (if given) receives one FormulaReport per formula."""
    plan = lowering_plan(instance)
    facts = vector_facts(instance)
    fresh = fresh_outputs(instance)
    if fresh and len(fresh) == len(instance.outputs):
        outputs = {name: np.empty(shape, dtype=dtype) for name, (_, shape, dtype)
                   in fresh.items()}
    else:
        fresh = {}
        outputs = allocate_outputs(instance, plan)
    first_writers = {first for first, _, _ in fresh.values()}
    arrays = lowering_arrays(instance, inputs, outputs)
    for number, (formula, known) in enumerate(zip(plan.formulas, facts)):
        driver = VectorFormula(instance, known, arrays, profile, max_memory,
                               fresh=number in first_writers)
        try:
            driver.run()
            report = FormulaReport(formula, "vector")
        except Refused as why:
            if driver.saved is not None:  # some boxes were written before the fallback
                _restore(arrays[formula.output], driver.saved)
            driver.initialise()
            run_formula(instance, formula, arrays, profile)
            report = FormulaReport(formula, "compiled", why.reason)
        driver.initialise()  # a fresh output the formula did not write entirely
        if reports is not None:
            reports.append(report)
    return lowered_outputs(instance, plan, arrays)  # a formula may adopt a new array


def fresh_outputs(instance: OperatorInstance) -> Fresh:
    """`find_fresh_outputs`, found once and kept on the instance
    (`common.InstanceFacts.fresh_outputs`)."""
    facts = facts_of(instance)
    if facts.fresh_outputs is None:
        facts.fresh_outputs = find_fresh_outputs(instance, vector_facts(instance))
    return facts.fresh_outputs


def find_fresh_outputs(instance: OperatorInstance, facts: tuple[FormulaFacts, ...]) -> Fresh:
    """The outputs that need no zeros before the formulas run: output name -> (the number of
    the formula that first names it, its shape, its dtype). That formula assigns it (`=`, no
    condition, not a pack item, not reading its output) and no formula before it names it, so
    nothing reads the output before that formula stores; the output is allocated with
    `np.empty`, and `Stores` fills it with the zeros `allocate_outputs` would have given before
    any store that does not assign every cell (or adopt a new array), as does `run_vector`
    before a fallback and after a formula that stored nothing. The common `y[i..] = f(x[i..])`
    then never writes its output twice (zeros, then values): for large outputs, the zeros cost
    a pass over memory."""
    plan = lowering_plan(instance)
    found: Fresh = {}
    named: set[str] = set()
    for number, known in enumerate(facts):
        formula = known.formula
        output = formula.output
        info = instance.outputs.get(output)
        if output not in named and isinstance(info, TensorType) and formula.op == "=" and \
                formula.item is None and formula.condition is None and \
                formula.counted is None and not known.reads_output and \
                plan.implicit_start.get(output, 0) == 0:
            shape = allocation_shape(plan, output, info)
            dtype = NUMPY_DTYPES.get(info.dtype)
            if shape is not None and all(isinstance(e, int) for e in shape) and \
                    dtype is not None:
                found[output] = (number, shape, dtype)
        named.add(output)
        named.update(*(known.shape.free_names(part) for part in known.shape.parts
                       if isinstance(part, ast.Node)))
    return found


def _restore(target: Any, saved: Any) -> None:
    if isinstance(target, list):
        for array, copy in zip(target, saved):
            np.copyto(array, copy)
    else:
        np.copyto(target, saved)


class VectorFormula:
    """Runs one formula over its iteration space, box by box.

    `saved` is a copy of the output taken before the first of several boxes writes: when a
    later box refuses, `run_vector` restores it before the compiled engine runs the formula.
    `fresh`: the output was allocated without its zeros (`fresh_outputs`)."""

    def __init__(self, instance: OperatorInstance, facts: FormulaFacts, arrays: dict[str, Any],
                 profile: rules.Profile, max_memory: int, fresh: bool = False) -> None:
        self.facts, self.formula, self.arrays = facts, facts.formula, arrays
        self.max_memory = max_memory
        self.kind = output_kind(instance, self.formula.output)
        self.context = FormulaContext(instance, arrays, profile, facts, Inputs())
        self.profile = profile
        self.saved: Any = None
        self.stores: Stores | None = None
        self.fresh = fresh

    def initialise(self) -> None:
        """Give a fresh output its zeros, unless a store has already written every cell."""
        if self.stores is not None:
            self.fresh = self.fresh and self.stores.fresh
        if self.fresh:
            self.arrays[self.formula.output].fill(0)
            self.fresh = False

    def run(self) -> None:
        facts, formula = self.facts, self.formula
        if formula.counted is not None:
            raise Refused(f"it counts the dynamic extent '{formula.counted.name}'")
        scalar = scalar_axes(facts, self.arrays)
        if facts.reads_output:
            steps = math.prod(facts.axes[a].size for a in scalar)
            total = math.prod(axis.size for axis in facts.axes)
            if steps and total // steps < MIN_CELLS_PER_STEP:
                raise Refused("too few output cells per sequential step")
        whole = contraction_box(facts, self.arrays, scalar, self.max_memory) \
            if self.kind == "real" else None
        if whole is not None and self.run_boxes(whole, contraction_only=True):
            return
        # (not a contraction after all, and nothing written: boxed as any formula)
        self.run_boxes(plan_boxes(facts, self.arrays, scalar, self.max_memory))

    def run_boxes(self, boxes: Boxes, contraction_only: bool = False) -> bool:
        """Run the formula box by box; True once done. `contraction_only`: the boxes were
        planned for a contraction (`contraction_box`); a box whose store turns out not to be
        one stops the run before writing anything, and the answer is False."""
        facts, formula = self.facts, self.formula
        if len(boxes.spans) > 1:
            self.initialise()  # the copy below must be of the zeros
        stores = Stores(formula, self.kind, self.profile, self.arrays, facts.reads_output,
                        check_rewrites=boxes.reordered and formula.op in
                        ("=", ":=") and not facts.reads_output, fresh=self.fresh)
        self.stores = stores
        if any(axis.size == 0 for axis in facts.axes):
            return True
        if len(boxes.spans) > 1:  # a single box writes only once every check has passed
            target = self.arrays[formula.output]
            self.saved = [a.copy() for a in target] if isinstance(target, list) else \
                target.copy()
        for spans in boxes.spans:
            if not self.run_box(Box(formula, facts.axes, spans, boxes.sequential), stores,
                                contraction_only):
                return False
        return True

    def run_box(self, box: Box, stores: Stores, contraction_only: bool = False) -> bool:
        """Run the formula over one box; False (nothing written) where `contraction_only`
        and the store is not a contraction, else True."""
        f = self.formula
        ev = BoxEvaluator(self.context, box)
        for local in f.locals:
            box.frame[local.name] = ev.visit(local.value, None)
        cond: Mask = None
        if f.condition is not None:
            flag = truth(ev.visit(f.condition, None))
            if flag is False:
                return True
            cond = None if flag is True else flag
        reads: list[Read] | None = None
        if f.op == "+=" and self.kind in ("int", "real"):
            # a contraction: a factor that is itself a guarded tensor access may read a
            # zero-padded view (an index outside the tensor reads 0, which adds nothing); if
            # the store is not a contraction after all, the factors are evaluated again
            # without padding
            nodes = ev.product_factors(f.value)
            live = box.live
            reads = [ev.factor(node, cond) for node in nodes]
        else:
            value = ev.visit(f.value, cond)
        if contraction_only and reads is None:
            return False
        item, target = self.output_target(ev, cond)
        raw = ev.index_values(f.access, cond, storing=True)[0]
        unguarded = both(box.live, cond)  # the iterations the store's guards may skip
        positions = ev.resolved(raw, cond, target.shape)
        valid = both(box.live, cond)
        if not anywhere(valid):
            return True
        if reads is not None:
            out = stores.output_view(box, target, positions)
            if out is not None and stores.contract(box, out[0], out[1], reads, valid):
                return True
            if contraction_only:
                return False
            if out is None and stores.add_by_taps(box, target, raw, reads, unguarded):
                return True
            if any(read.padded for read in reads):
                box.live = live
                reads = [Read(ev.visit(node, cond)) for node in nodes]
                positions = ev.positions(f.access, cond, target.shape, storing=True)
                valid = both(box.live, cond)
            value = reads[0].value
            for read in reads[1:]:
                value = ev.numeric2("*", value, read.value, cond)
        stores.store(box, target, item, positions, value, valid)
        return True

    def output_target(self, ev: BoxEvaluator, active: Mask) -> tuple[int | None, np.ndarray]:
        """The array the formula writes, with its pack item index for `ys[k][...]`."""
        target = self.arrays[self.formula.output]
        if self.formula.item is not None:
            k = ev.visit(self.formula.item, active)
            if not isinstance(k, int) or isinstance(k, bool) or not isinstance(target, list) \
                    or not 0 <= k < len(target):
                raise Refused("a pack item index that is not a valid int")
            return k, target[k]
        if isinstance(target, list):
            raise Refused("a store into a whole pack of tensors")
        return None, target
