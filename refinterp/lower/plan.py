"""The lowering plan (spec §2.12): what every @lower formula of an instance computes, checked.

For each formula: the output it assigns (and the pack item, for `ys[k][...]`), the left-hand
indices, the assignment operator, the loop-local values, the right-hand expression, the
condition, and its index symbols with their bounds evaluated in the instance. Index symbols
loop in declaration order, outermost first (row-major): that order decides summation order and
ties, so it is part of the semantics (docs/semantics.md). The engines (scalar, vector) run
plans; they never re-analyse the AST.

It also holds the vocabulary every engine shares: what each update operator means
(`UPDATE_OPS`), where it starts (`NEUTRAL`, `start_value`), the int64 bounds, the `:` marker
(`FULL`), the output's kind (`output_kind`), and `derived`, which keeps what is derived from an
instance alone (its plan, the compile-time values of its formulas) on the instance itself.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import Any, Callable, TypeVar

from refinterp.core.diagnostics import LoweringDiagnostic
from refinterp.language.binding import free_names
from refinterp.language.expr import evaluate
from refinterp.language.invocation import OperatorInstance
from refinterp.language.values import NULL, Value, format_literal
from refinterp.numeric.representation import INT64_MAX, INT64_MIN  # re-exported for the engines
from refinterp.syntax import ast

T = TypeVar("T")

# Each update operator and the binary operator that combines the current value with the new one.
UPDATE_OPS = {"+=": "+", "*=": "*", "&=": "&&", "|=": "||", "<=": "<<", ">=": ">>"}

# Neutral elements for implicit initialisation (§2.12: 0 for +=, 1 for *=, true for &=,
# false for |=; the Khronos dialect also lets min/max start from +inf / -inf).
NEUTRAL = {"+=": 0, "*=": 1, "&=": True, "|=": False, "<=": "+inf", ">=": "-inf"}
NEEDS_INITIALISATION = (":=",)

__all__ = ["FULL", "INT64_MAX", "INT64_MIN", "NEUTRAL", "UPDATE_OPS", "Formula", "IndexRange",
           "LoweringPlan", "derived", "lowering_plan", "output_kind", "plan_lowering",
           "start_value"]


def start_value(start: Value, kind: str) -> Any:
    """A neutral element (a value of `NEUTRAL`) as a value of an output of `kind`: the int
    min/max start at the int64 extremes, the real ones at ±inf."""
    if start == "+inf":
        return INT64_MAX if kind == "int" else math.inf
    if start == "-inf":
        return INT64_MIN if kind == "int" else -math.inf
    if kind == "bool":
        return bool(start)
    return start


class _Full:
    """The full-range index `:` of one dimension, before it is expanded."""

    def __repr__(self) -> str:
        return ":"


FULL = _Full()


@dataclass(frozen=True)
class IndexRange:
    """`name < bound`: `bound` an int (name runs over range(bound)) or a pack of ints (name is a
    pack of indices running over every multi-index, row-major)."""

    name: str
    bound: Value
    node: ast.IndexBound

    def size(self) -> int:
        if isinstance(self.bound, tuple):
            size = 1
            for extent in self.bound:
                size *= extent
            return size
        return int(self.bound)


@dataclass(frozen=True)
class Formula:
    """One @lower formula, ready to run."""

    node: ast.Lowering
    output: str
    item: ast.Expr | None            # the pack item index of `ys[k][...]`, if any
    access: tuple[ast.IndexItem, ...]
    op: str
    value: ast.Expr
    locals: tuple[ast.LocalAssign, ...]
    indices: tuple[IndexRange, ...]
    condition: ast.Expr | None

    def iterations(self) -> int:
        total = 1
        for index in self.indices:
            total *= index.size()
        return total


@dataclass(frozen=True)
class LoweringPlan:
    """The formulas of an instance in source order, and which outputs start implicitly."""

    formulas: tuple[Formula, ...]
    implicit_start: dict[str, Value]  # output -> neutral element of its update operator


def plan_lowering(instance: OperatorInstance) -> LoweringPlan:
    """Plan the @lower block of an instance (§2.12), or raise a LoweringDiagnostic."""
    block = instance.definition.block("lower")
    formulas = tuple(_formula(instance, node) for node in (block.entries if block else ()))
    implicit: dict[str, Value] = {}
    by_output: dict[str, list[Formula]] = {}
    for formula in formulas:
        by_output.setdefault(formula.output, []).append(formula)
    for key, group in by_output.items():
        ops = [f.op for f in group]
        first = group[0]
        if len(group) > 2 or ops.count("=") > 1 or (len(group) == 2 and ops[0] != "="):
            raise LoweringDiagnostic(
                f"output '{first.output}' is assigned by {len(group)} formulas ({', '.join(ops)});"
                f" at most an initialisation '=' followed by one update is allowed",
                group[-1].node.span, [f"the first formula is at {first.node.span}"])
        if len(group) == 1 and first.op != "=":
            if first.op in NEEDS_INITIALISATION:
                raise LoweringDiagnostic(
                    f"'{first.op}' updates output '{first.output}', which needs an initialising "
                    f"'=' formula before it", first.node.span)
            implicit[key] = NEUTRAL[first.op]
    return LoweringPlan(formulas, implicit)


def derived(instance: OperatorInstance, key: str, make: Callable[[], T]) -> T:
    """What an engine derives from `instance` alone (`make()`), made once and kept on the
    instance itself, so that it lives exactly as long as the instance it describes."""
    store = instance.derived
    if key not in store:
        store[key] = make()
    return store[key]


def lowering_plan(instance: OperatorInstance) -> LoweringPlan:
    """`plan_lowering(instance)`, made once per instance."""
    return derived(instance, "plan", lambda: plan_lowering(instance))


def output_kind(instance: OperatorInstance, output: str) -> str:
    """The declared kind ('real', 'int' or 'bool') of an output (of its items, for a pack)."""
    info = instance.outputs[output]
    return (info[0] if isinstance(info, tuple) else info).dtype


def _formula(instance: OperatorInstance, node: ast.Lowering) -> Formula:
    target = node.target
    assert isinstance(target, ast.Subscript)  # the parser guarantees it
    item = None
    base = target.base
    if isinstance(base, ast.Subscript):  # `ys[k][...]`: a pack item
        if len(base.items) != 1 or base.trailing_comma:
            raise LoweringDiagnostic("a pack item is selected by one index: 'ys[k][...]'",
                                     base.span)
        item = base.items[0]
        base = base.base
    if not isinstance(base, ast.Name) or base.name not in instance.outputs:
        outputs = ", ".join(instance.outputs) or "none"
        raise LoweringDiagnostic(
            "the left-hand side of a formula must access an output tensor", target.span,
            [f"outputs: {outputs}"])
    env = instance.environment()
    indices = []
    seen: set[str] = set()
    for unrolled in node.unroll:
        # `unroll..(k -> n)`: k is the outermost loop, one unrolled copy per value (§2.12)
        if unrolled.index is None or unrolled.count is None:
            raise LoweringDiagnostic("an unrolled formula needs an index and a count, as in "
                                     "'unroll..(k -> n)'", unrolled.span)
        bound = ast.IndexBound(unrolled.index, unrolled.count, span=unrolled.span)
        value = evaluate(unrolled.count, env)
        _check_bound(bound, value)
        seen.add(unrolled.index)
        indices.append(IndexRange(unrolled.index, value, bound))
    condition = node.condition
    for bound in node.bounds:
        if bound.name in seen:
            raise LoweringDiagnostic(f"index '{bound.name}' is bounded twice", bound.span)
        dependent = [r for r in indices if r.name in free_names(bound.bound)]
        seen.add(bound.name)
        if dependent:
            value = _dependent_bound(bound, dependent, instance)
            guard = ast.Binary("<", ast.Name(bound.name, span=bound.span), bound.bound,
                               span=bound.span)
            condition = guard if condition is None else \
                ast.Binary("&&", guard, condition, span=condition.span)
        else:
            value = evaluate(bound.bound, env)
            _check_bound(bound, value)
        indices.append(IndexRange(bound.name, value, bound))
    return Formula(node, base.name, item, target.items, node.op, node.value, node.locals,
                   tuple(indices), condition)


def _dependent_bound(bound: ast.IndexBound, earlier: list[IndexRange],
                     instance: OperatorInstance) -> int:
    """A bound that uses earlier indices (`z < sizes[n]`, spec §4.1.3 split): the index runs up
    to the largest value the bound takes, and iterations at or above the bound of the current
    earlier indices are skipped (the formula gets the guard `z < sizes[n]` before its own
    condition) — the same iterations, in the same row-major order, as a loop whose range
    depends on the outer indices."""
    largest = 0
    for combination in itertools.product(*(range(r.size()) for r in earlier)):
        env = instance.environment()
        for r, position in zip(earlier, combination):
            if isinstance(r.bound, tuple):
                raise LoweringDiagnostic(f"the bound of '{bound.name}' depends on the packed "
                                         f"index '{r.name}'", bound.bound.span)
            env.values[r.name] = position
        value = evaluate(bound.bound, env)
        _check_bound(bound, value)
        if isinstance(value, tuple):
            raise LoweringDiagnostic(f"the bound of '{bound.name}' depends on other indices and "
                                     f"must be an int", bound.bound.span)
        largest = max(largest, value)
    return largest


def _check_bound(bound: ast.IndexBound, value: Value) -> None:
    values = value if isinstance(value, tuple) else (value,)
    if value is NULL or any(not isinstance(v, int) or isinstance(v, bool) or v < 0
                            for v in values):
        raise LoweringDiagnostic(
            f"the bound of index '{bound.name}' must be a non-negative int or a pack of them; "
            f"got {format_literal(value)}", bound.bound.span)
