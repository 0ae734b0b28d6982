"""The lowering plan (spec §2.12): what every @lower formula of an instance computes, checked.

For each formula: the output it assigns (and the pack item, for `ys[k][...]`), the left-hand
indices, the assignment operator, the loop-local values, the right-hand expression, the
condition, and its index symbols with their bounds evaluated in the instance. Index symbols
loop in declaration order, outermost first (row-major): that order decides summation order and
ties, so it is part of the semantics (docs/semantics.md). The engines (reference, compiled,
vector) run plans; they never re-analyse the AST. An instance's plan is made once and kept on
it (refinterp.lower.common.lowering_plan).

It also holds the vocabulary every engine shares: what each update operator means
(`UPDATE_OPS`), where it starts (`NEUTRAL`, `start_value`), the int64 bounds, the `:` marker
(`FULL`) and the output's kind (`output_kind`).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import Any

from refinterp.core.diagnostics import LoweringDiagnostic
from refinterp.language.binding import free_names
from refinterp.language.expr import evaluate
from refinterp.language.invocation import OperatorInstance, TensorType
from refinterp.language.values import NULL, TensorValue, Value, format_literal
from refinterp.numeric.representation import INT64_MAX, INT64_MIN  # re-exported for the engines
from refinterp.syntax import ast
from refinterp.syntax.visitor import walk

# Each update operator and the binary operator that combines the current value with the new one.
UPDATE_OPS = {"+=": "+", "*=": "*", "&=": "&&", "|=": "||", "<=": "<<", ">=": ">>"}

# Neutral elements for implicit initialisation (§2.12: 0 for +=, 1 for *=, true for &=,
# false for |=; the Khronos dialect also lets min/max start from +inf / -inf).
NEUTRAL = {"+=": 0, "*=": 1, "&=": True, "|=": False, "<=": "+inf", ">=": "-inf"}
NEEDS_INITIALISATION = (":=",)

__all__ = ["FULL", "INT64_MAX", "INT64_MIN", "NEUTRAL", "UPDATE_OPS", "CountedExtent", "Formula",
           "IndexRange", "LoweringPlan", "allocation_shape", "output_kind", "plan_lowering",
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
class CountedExtent:
    """A dynamic output extent decided by the formula that writes the output (§2.6 dynamic
    output shapes, §3.1; the Khronos dialect's `layout.nonzero`): the output declares
    `name|bound` with `name` bound by nothing, and its formula indexes it with `name` on the
    left-hand side (`index[:, k] = i, i < s | x[i..] != 0`). Each iteration that stores writes
    at `name` = the number of earlier stores; afterwards the extent along `dimension` is that
    count (at most `bound`). docs/semantics.md, "Counted output extents"."""

    name: str
    output: str
    dimension: int
    bound: int
    node: ast.Name                   # `name` on the left-hand side


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
    counted: CountedExtent | None = None  # the output extent this formula counts, if any

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
        counting = next((f for f in group if f.counted is not None), None)
        if counting is not None and len(group) > 1:
            raise LoweringDiagnostic(
                f"output '{key}' has the counted extent '{counting.counted.name}', so one "
                f"formula alone writes it; it is assigned by {len(group)} formulas",
                group[-1].node.span, [f"the counting formula is at {counting.node.span}"])
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
    _check_dynamic_extents(instance, formulas)
    return LoweringPlan(formulas, implicit)


def allocation_shape(plan: LoweringPlan, output: str, info: TensorType
                     ) -> tuple[int | None, ...] | None:
    """The shape a (non-pack) output is allocated with before the formulas run: its declared
    shape, with a counted extent at its bound (the counting formula trims it to its count)."""
    if info.shape is None:
        return None
    shape = list(info.shape)
    for formula in plan.formulas:
        if formula.counted is not None and formula.output == output:
            shape[formula.counted.dimension] = formula.counted.bound
    return tuple(shape)


def _check_dynamic_extents(instance: OperatorInstance, formulas: tuple[Formula, ...]) -> None:
    """Every dynamic extent of an output (§2.6 `~|k`, `s|k`) must be counted by a formula
    (`CountedExtent`): nothing else in a @lower block decides an extent."""
    counted = {(f.output, f.counted.dimension) for f in formulas if f.counted is not None}
    block = instance.definition.block("output")
    for decl in block.entries if block else ():
        info = instance.outputs[decl.name]
        for item in info if isinstance(info, tuple) else (info,):
            for dimension, extent in enumerate(item.shape or ()):
                if extent is not None or (decl.name, dimension) in counted:
                    continue
                symbol = instance.named_extents.get(decl.name, {}).get(dimension)
                bound = item.bounds[dimension] if item.bounds else None
                written = f"{symbol or '~'}|{bound}" if bound is not None else symbol or "~"
                hint = (f"no formula indexes '{decl.name}' with '{symbol}' on its left-hand "
                        f"side, which would count the extent" if symbol else
                        f"name it (`k|{bound if bound is not None else 'bound'}`) and index "
                        f"'{decl.name}' with that name on the left-hand side of its formula: "
                        f"the formula then counts the extent")
                raise LoweringDiagnostic(
                    f"output '{decl.name}' has the dynamic extent {written} in dimension "
                    f"{dimension}, which the @lower block does not compute", decl.span,
                    [hint, "docs/semantics.md, \"Counted output extents\""])


def output_kind(instance: OperatorInstance, output: str) -> str:
    """The declared kind ('real', 'int' or 'bool') of an output (of its items, for a pack)."""
    info = instance.outputs[output]
    if isinstance(info, tuple) and not info:  # a pack of zero items: its declared item type
        decl = next(d for d in instance.definition.block("output").entries if d.name == output)
        return instance.dtypes.get(decl.type.name, decl.type.name)
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
    counted = _counted_extent(instance, node, base.name, target.items)
    _refuse_mixed_selects(instance, node, indices)
    return Formula(node, base.name, item, target.items, node.op, node.value, node.locals,
                   tuple(indices), condition, counted)


def _counted_extent(instance: OperatorInstance, node: ast.Lowering, output: str,
                    access: tuple[ast.IndexItem, ...]) -> CountedExtent | None:
    """The extent `k|bound` of `output` this formula counts, if its left-hand side indexes
    `output` with `k` (`CountedExtent`). Such a `k` stands nowhere else: only as a whole index
    of the left-hand side of an `=` formula writing the output that declares it, once, and it
    is not a loop index."""
    symbols = {name for dims in instance.named_extents.values() for name in dims.values()}
    if not symbols:
        return None
    counters = [i for i in access if isinstance(i, ast.Name) and i.name in symbols]
    elsewhere = (*(i for i in access if not any(i is c for c in counters)), node.value,
                 node.condition, *(local.value for local in node.locals),
                 *(b.bound for b in node.bounds), *(u.count for u in node.unroll),
                 *(b for b in (node.target.base,) if isinstance(b, ast.Subscript)))
    for part in elsewhere:
        for found in walk(part) if part is not None else ():
            if isinstance(found, ast.Name) and found.name in symbols:
                raise LoweringDiagnostic(
                    f"'{found.name}' names a counted dynamic output extent: it may only stand "
                    f"as a whole index of the left-hand side of the formula writing that "
                    f"output", found.span)
    for bound in (*node.bounds, *node.unroll):
        name = bound.name if isinstance(bound, ast.IndexBound) else bound.index
        if name in symbols:
            raise LoweringDiagnostic(f"'{name}' names a dynamic output extent; it cannot also "
                                     f"be a loop index", bound.span)
    if not counters:
        return None
    counter = counters[0]
    if len(counters) > 1:
        raise LoweringDiagnostic("a formula counts one dynamic extent, once; its left-hand "
                                 "side names another", counters[1].span)
    dims = [d for d, name in instance.named_extents.get(output, {}).items()
            if name == counter.name]
    if not dims:
        raise LoweringDiagnostic(f"'{counter.name}' names a dynamic extent of another output, "
                                 f"not of '{output}'", counter.span)
    if len(dims) > 1:
        raise LoweringDiagnostic(f"'{counter.name}' names {len(dims)} dimensions of "
                                 f"'{output}'; a counted extent names one", counter.span)
    if node.op != "=":
        raise LoweringDiagnostic(f"a formula counting the extent '{counter.name}' writes each "
                                 f"new position once, with '='; not '{node.op}'", node.span)
    info = instance.outputs[output]
    assert not isinstance(info, tuple)  # named extents are recorded for non-pack outputs
    bound = info.bounds[dims[0]]
    if not isinstance(bound, int) or isinstance(bound, bool):
        raise LoweringDiagnostic(f"the counted extent '{counter.name}' of '{output}' needs an "
                                 f"int upper bound; got {format_literal(bound)}", counter.span)
    return CountedExtent(counter.name, output, dims[0], bound, counter)


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


def _refuse_mixed_selects(instance: OperatorInstance, node: ast.Lowering,
                          indices: list[IndexRange]) -> None:
    """§2.4 Select in a formula. Under a single condition, a single branch beside a pack branch
    is repeated to the pack branch's length when taken (`expr.Evaluator.repeated`, the rule
    of compile-time expressions, which also decides every compile-time part of a formula).
    **(decision)** Formulas have no static types, so no engine can tell, when the single branch
    is taken, that the other one is a pack: a select that is not compile-time and whose
    branches are one a pack and one a single value (as far as `_is_pack` tells) is refused
    for every engine (docs/semantics.md "Select"); `[v ..(n)]` spells the repetition."""
    packs: dict[str, bool | None] = {r.name: isinstance(r.bound, tuple) for r in indices}
    block = instance.definition.block("input")
    tensors = {decl.name: decl.type.pack is not None for decl in block.entries} if block else {}
    for name, value in instance.symbols.items():
        known = instance.types.get(name)
        if name not in tensors and not isinstance(value, TensorValue):
            packs[name] = known.packed if known is not None else isinstance(value, tuple)
    for group in (instance.outputs, instance.variables):
        tensors.update({name: isinstance(info, tuple) for name, info in group.items()})
    tensors.update({name: isinstance(info, tuple)
                    for name, (info, _) in instance.constants.items()})
    runtime = set(tensors) | {r.name for r in indices} | {lo.name for lo in node.locals}
    named = [(lo.name, lo.value) for lo in node.locals] + [("", node.value)] + \
        ([("", node.condition)] if node.condition is not None else [])

    def mixed(select: ast.Select) -> bool:
        try:
            return _is_pack(select.cond, packs, tensors) is False and \
                {_is_pack(select.then, packs, tensors),
                 _is_pack(select.otherwise, packs, tensors)} == {True, False}
        except RecursionError:  # too deep to tell: left to the engines
            return False

    for name, expr in named:
        for found in walk(expr):
            if isinstance(found, ast.Select) and found.otherwise is not None and \
                    free_names(found) & runtime and mixed(found):
                raise LoweringDiagnostic(
                    "a select with a single condition between a pack and a single value is "
                    "not supported in a @lower formula", found.span,
                    ["§2.4: the single value, when taken, is repeated to the length of the "
                     "pack branch; write that repetition, as in 'c ? xs : [v ..(n)]'"])
        if name:
            try:
                packs[name] = _is_pack(expr, packs, tensors)
            except RecursionError:
                packs[name] = None


def _is_pack(node: ast.Expr, packs: dict[str, bool | None], tensors: dict[str, bool]
             ) -> bool | None:
    """Whether a formula expression is a pack (§2.4: the pack rules of each form), None where
    that is not evident from its form: `packs` says it of index symbols, locals and
    compile-time symbols, `tensors` which tensor names are packs of tensors."""
    def pack(expr: ast.Expr | None) -> bool | None:
        return False if expr is None else _is_pack(expr, packs, tensors)

    def any_of(*parts: bool | None) -> bool | None:
        return True if True in parts else None if None in parts else False

    if isinstance(node, (ast.IntLiteral, ast.RealLiteral, ast.BoolLiteral, ast.Constant,
                         ast.StringLiteral)):
        return False
    if isinstance(node, (ast.ListExpr, ast.Substitute)):
        return True
    if isinstance(node, ast.Name):
        return packs.get(node.name)
    if isinstance(node, ast.Unary):
        return False if node.op == "?" else pack(node.operand)
    if isinstance(node, (ast.Builtin, ast.Call)):
        return pack(node.args[0]) if len(node.args) == 1 else None
    if isinstance(node, ast.Bounded):
        return pack(node.index)
    if isinstance(node, ast.Fold):
        return node.cumulative
    if isinstance(node, ast.Member):
        return node.name == "shape"
    if isinstance(node, ast.Binary):
        if node.op == "in":
            return pack(node.left)
        if isinstance(node.left, ast.Fold) and node.left.op == node.op:
            return pack(node.right)  # `x + .. + init`, as types.fold_with_initial
        return any_of(pack(node.left), pack(node.right))
    if isinstance(node, ast.Select):
        return any_of(pack(node.cond), pack(node.then), pack(node.otherwise))
    if isinstance(node, ast.Subscript):
        base = node.base
        if isinstance(base, ast.Name) and base.name in tensors:  # a tensor access
            return tensors[base.name] or any(isinstance(i, ast.Slice) for i in node.items)
        if isinstance(base, ast.Subscript) and isinstance(base.base, ast.Name) and \
                base.base.name in tensors:  # `xs[k][...]`
            return any(isinstance(i, ast.Slice) for i in node.items)
        if len(node.items) == 1:
            item = node.items[0]
            return True if isinstance(item, ast.Slice) else pack(item)
    return None
