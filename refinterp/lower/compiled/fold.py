"""Partial evaluation of a formula in its instance, before code generation.

The standard library's formulas are rank-polymorphic and configurable: packed indices `zi < s`,
slices of them `zi[px:px+rx]`, selects on attributes or shapes (`transA ? .. : ..`,
`a == 1 ? 0 : ..`), optional operands (`C[..] ?? 0.0`, `x << max ?? x`) and pack locals
(`oi = data_format == 'NCX' ? [bi,ni,i..] : ..`). All of that is decided by the instance (and
by which optional inputs are given) before the first element. `fold_formula` rewrites such a
formula into an equivalent one of scalar indices and scalar expressions, which
the code generation (refinterp.lower.compiled.kernel) compiles.

"Equivalent" means: the same loops in the same order, the same operations on the same values in
the same order, and an error in exactly the iterations where the reference
(the definition) has one. A part the reference would evaluate is therefore only dropped
when it cannot fail and cannot skip (`droppable`); anything outside what is folded here makes
`fold_formula` return None, and the formula runs as it is.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from refinterp.core.diagnostics import Diagnostic
from refinterp.language.binding import free_names
from refinterp.language.expr import evaluate, fold_pack
from refinterp.language.invocation import OperatorInstance
from refinterp.language.types import fold_with_initial
from refinterp.language.values import NULL, TensorValue
from refinterp.lower.common import Refused, tests_given_tensor
from refinterp.lower.plan import Formula, IndexRange
from refinterp.numeric import rules
from refinterp.syntax import ast
from refinterp.syntax.visitor import ExprVisitor, children

Folded = Any  # an ast.Expr (one value), a list of ast.Expr (a pack of known length), or NULL

FOLD_OPS = ("+", "*", "&&", "||", "<<", ">>")  # the folds folded (not cumulative), then compiled
MAX_FOLD_ITEMS = 64  # a longer fold stays on the reference: its chain would nest too deeply


@dataclass(frozen=True)
class SelectItem(ast.Select):
    """One item of `c ? a : b` on a pack condition computed at run time, as `_Folder` leaves
    it: the reference computes the whole condition and both branches, then takes this item
    from one; so the code generation compiles it as a select of the item only where nothing in its
    condition and branches can fail or skip (computing one branch is then the same)."""


def fold_formula(instance: OperatorInstance, formula: Formula, arrays: dict[str, Any],
                 profile: rules.Profile, reasons: list[str] | None = None) -> Formula | None:
    """`formula` with its compile-time parts folded and its packed indices expanded into
    scalar ones, or None when it has nothing to fold or cannot be folded (the construct that
    stopped it is appended to `reasons`, if given)."""
    try:
        return _Folder(instance, formula, arrays, profile).fold()
    except Refused as refused:  # outside what is folded: the formula runs unchanged
        if reasons is not None:
            reasons.append(str(refused))
        return None


class _Folder(ExprVisitor[Any]):
    """Folds one formula; one `visit_<Class>` per node class it can fold (any other class
    refuses the formula, which then runs unfolded)."""

    def __init__(self, instance: OperatorInstance, formula: Formula, arrays: dict[str, Any],
                 profile: rules.Profile) -> None:
        self.instance, self.formula, self.arrays, self.profile = (
            instance, formula, arrays, profile)
        self.symbols = instance.symbols
        self.runtime = {r.name for r in formula.indices} | \
            {local.name for local in formula.locals} | set(arrays)
        self.bounds: dict[str, int] = {}           # scalar index -> bound
        self.packs: dict[str, list[ast.Expr]] = {}  # packed index or inlined local -> items
        self.scalar_locals: set[str] = set()

    # ------------------------------------------------------------------ the formula

    def fold(self) -> Formula:
        formula = self.formula
        taken = self.runtime | set(self.symbols)
        indices: list[IndexRange] = []
        for r in formula.indices:
            if isinstance(r.bound, tuple):
                names = []
                for k, extent in enumerate(r.bound):
                    name = f"{r.name}__{k}"
                    if name in taken:
                        raise Refused("name clash")
                    taken.add(name)
                    self.runtime.add(name)  # folded items name it: not compile-time
                    names.append(ast.Name(name, span=r.node.span))
                    self.bounds[name] = extent
                    indices.append(IndexRange(name, extent, r.node))
                self.packs[r.name] = names
            else:
                self.bounds[r.name] = r.bound
                indices.append(r)
        locals_: list[ast.LocalAssign] = []
        for local in formula.locals:
            value = self.expr(local.value)
            if value is NULL:
                raise Refused("null local")
            if isinstance(value, list):
                if all(self.droppable(v, bounded=True) for v in value):
                    self.packs[local.name] = value  # inlined where it is used
                else:  # one scalar local per item, computed where the pack is
                    self.packs[local.name] = self.split_local(local, value, taken, locals_)
            else:
                self.scalar_locals.add(local.name)
                locals_.append(replace(local, value=value))
        condition = None
        if formula.condition is not None:
            cond = self.expr(formula.condition)
            if isinstance(cond, list) or cond is NULL:
                raise Refused("condition")
            if isinstance(cond, ast.BoolLiteral) and cond.value is True:
                cond = None  # a compile-time true condition: nothing to evaluate
            condition = cond
        value = self.expr(formula.value)
        access = self.index_items(formula.access)
        item, value = self.store(value, access)
        return replace(formula, item=item, access=tuple(access), value=value,
                       locals=tuple(locals_), indices=tuple(indices), condition=condition)

    def store(self, value: Folded, access: list[ast.Expr]) -> tuple[ast.Expr | None, ast.Expr]:
        """The folded pack item and value of the formula's store: into a tensor; into one item
        of a pack of tensors (`ys[k][..] = v`, k one int); or into every item of a pack
        (`ys[..] = v`, packed assignment: v one value for all items, or a pack of one value
        per item, kept as a ListExpr)."""
        formula = self.formula
        target = self.arrays.get(formula.output)
        if value is NULL:
            raise Refused("value")
        if formula.item is None and isinstance(target, np.ndarray):
            if isinstance(value, list):
                raise Refused("value")
            return None, value
        if not _tensor_pack(target):
            raise Refused("output")
        if formula.item is not None:
            item = self.expr(formula.item)
            if item is NULL or isinstance(item, list) or isinstance(value, list):
                raise Refused("pack item output")
            return item, value
        # the reference resolves a packed assignment's position once, against no extent: a
        # guard `|e|` there never skips, unlike one where generated code resolves it
        if any(isinstance(i, ast.Bounded) for i in access):
            raise Refused("guarded index of a pack")
        if isinstance(value, list):
            if len(value) != len(target):
                raise Refused("pack lengths")
            value = ast.ListExpr(tuple(value), span=formula.value.span)
        return None, value

    # ------------------------------------------------------------------ expressions

    def compile_time(self, node: ast.Expr) -> bool:
        if isinstance(node, (ast.Bounded, ast.Expand, ast.Zip, ast.Placeholder)):
            return False
        names = free_names(node)
        return not names & self.runtime and all(
            not isinstance(self.symbols.get(n), TensorValue) for n in names)

    def constant(self, value: Any, node: ast.Node) -> Folded:
        span = node.span
        if value is NULL:
            return NULL
        if isinstance(value, bool):
            return ast.BoolLiteral(value, span=span)
        if isinstance(value, int):
            return ast.IntLiteral(value, span=span)
        if isinstance(value, float):
            return ast.RealLiteral(value, span=span)
        if isinstance(value, tuple):
            items = [self.constant(v, node) for v in value]
            if any(isinstance(v, list) or v is NULL for v in items):
                raise Refused("nested constant")
            return items
        raise Refused("constant")

    def expr(self, node: ast.Expr) -> Folded:
        if self.compile_time(node):
            try:
                value = evaluate(node, self.instance.environment(self.profile))
            except Diagnostic:
                raise Refused("compile-time error") from None
            return self.constant(value, node)
        return self.visit(node)

    def generic_visit(self, node: Any, *args: Any) -> Folded:
        raise Refused(type(node).__name__)

    def visit_Name(self, node: ast.Name) -> Folded:
        if node.name in self.packs:
            return list(self.packs[node.name])
        if node.name in self.bounds or node.name in self.scalar_locals:
            return node
        raise Refused(node.name)

    def visit_Unary(self, node: ast.Unary) -> Folded:
        if tests_given_tensor(node, self.symbols,
                              self.bounds.keys() | self.packs.keys() | self.scalar_locals):
            return ast.BoolLiteral(True, span=node.span)
        operand = self.expr(node.operand)
        if node.op == "?":
            if operand is NULL:
                return ast.BoolLiteral(False, span=node.span)
            raise Refused("?")
        if operand is NULL:
            return NULL
        if isinstance(operand, list):
            return [replace(node, operand=v) for v in operand]
        return replace(node, operand=operand)

    def visit_Binary(self, node: ast.Binary) -> Folded:
        if node.op == "??":
            left = self.expr(node.left)
            if left is NULL:
                return self.expr(node.right)
            # a folded value is never null (every source of null folds to NULL): the right
            # operand is never evaluated
            return left
        if node.op in ("is", "in"):
            raise Refused(node.op)
        if fold_with_initial(node):
            return self.fold_from(node)
        left, right = self.expr(node.left), self.expr(node.right)
        if left is NULL or right is NULL:
            # both operands are evaluated, then the result is null
            if all(self.droppable_folded(v) for v in (left, right)):
                return NULL
            raise Refused("null operand")
        if isinstance(left, list) or isinstance(right, list):
            size = len(left) if isinstance(left, list) else len(right)
            lefts = left if isinstance(left, list) else [left] * size
            rights = right if isinstance(right, list) else [right] * size
            if len(lefts) != len(rights):
                raise Refused("pack lengths")
            return [replace(node, left=a, right=b) for a, b in zip(lefts, rights)]
        return replace(node, left=left, right=right)

    def visit_Select(self, node: ast.Select) -> Folded:
        cond = self.expr(node.cond)
        if isinstance(cond, ast.BoolLiteral) and self.compile_time(node.cond):
            if cond.value:
                return self.expr(node.then)
            if node.otherwise is None:
                raise Refused("select without else")
            return self.expr(node.otherwise)  # the other branch is never evaluated
        if isinstance(cond, list):
            return self.elementwise_select(node, cond)
        if node.otherwise is None or cond is NULL or self.compile_time(node.cond):
            raise Refused("select")
        then, other = self.expr(node.then), self.expr(node.otherwise)
        if any(v is NULL or isinstance(v, list) for v in (then, other)):
            raise Refused("select branches")
        return replace(node, cond=cond, then=then, otherwise=other)

    def elementwise_select(self, node: ast.Select, cond: list[ast.Expr]) -> list[ast.Expr]:
        """`c ? a : b` on a pack condition: the reference computes the condition and both
        branches (whole packs), then takes each item from one. An item whose condition is
        compile-time is its branch's item: the items not taken must be droppable, and those
        taken, computed in item order rather than branch by branch, may not skip. An item
        whose condition is computed at run time is a SelectItem (the code generation compiles
        it where nothing in it can fail)."""
        if node.otherwise is None:
            raise Refused("select without else")
        then, other = self.expr(node.then), self.expr(node.otherwise)
        if then is NULL or other is NULL:
            raise Refused("null branch")
        result: list[ast.Expr] = []
        used: set[int] = set()  # ids of items of `then` and `other`, alive while used
        for k, c in enumerate(cond):
            items = []
            for branch in (then, other):
                if isinstance(branch, list):
                    if k >= len(branch):
                        raise Refused("pack lengths")
                    branch = branch[k]
                items.append(branch)
            if self.compile_time(c):
                c = self.expr(c)
                if not isinstance(c, ast.BoolLiteral):
                    raise Refused("elementwise select")
                chosen = items[0] if c.value else items[1]
                if self.may_skip(chosen):
                    raise Refused("elementwise select")
                result.append(chosen)
                used.add(id(chosen))
            else:
                result.append(SelectItem(c, items[0], items[1], span=node.span))
                used.update(map(id, items))
        dropped = [v for branch in (then, other)
                   for v in (branch if isinstance(branch, list) else [branch])
                   if id(v) not in used]
        if not all(self.droppable(v, bounded=True) for v in dropped):
            raise Refused("elementwise select")
        return result

    def visit_call(self, node: ast.Builtin | ast.Call) -> Folded:
        if len(node.args) != 1:
            raise Refused("arguments")
        if isinstance(node, ast.Call) and (len(node.callee) != 1 or node.attributes is not None
                                           or node.generics):
            raise Refused("call")
        operand = self.expr(node.args[0])
        if operand is NULL:
            return NULL
        if isinstance(operand, list):
            return [replace(node, args=(v,)) for v in operand]
        return replace(node, args=(operand,))

    visit_Builtin = visit_Call = visit_call

    def visit_Bounded(self, node: ast.Bounded) -> Folded:
        index = self.expr(node.index)
        lower = self.expr(node.lower) if node.lower is not None else None
        upper = self.expr(node.upper) if node.upper is not None else None
        if any(v is NULL for v in (index, lower, upper)):
            raise Refused("null bound")
        if isinstance(index, list):
            size = len(index)
            lowers = lower if isinstance(lower, list) else [lower] * size
            uppers = upper if isinstance(upper, list) else [upper] * size
            if len(lowers) != size or len(uppers) != size:
                raise Refused("pack lengths")
            return [replace(node, index=i, lower=lo, upper=hi)
                    for i, lo, hi in zip(index, lowers, uppers)]
        if isinstance(lower, list) or isinstance(upper, list):
            raise Refused("pack bound")
        return replace(node, index=index, lower=lower, upper=upper)

    def visit_ListExpr(self, node: ast.ListExpr) -> Folded:
        items: list[ast.Expr] = []
        for item in node.items:
            if isinstance(item, ast.Expand):
                items.extend(self.expand(item))
            elif isinstance(item, ast.Range):
                raise Refused("range")
            else:
                value = self.expr(item)
                if value is NULL or isinstance(value, list):
                    raise Refused("list item")
                items.append(value)
        return items

    def expand(self, item: ast.Expand) -> list[ast.Expr]:
        value = self.expr(item.operand)
        if value is NULL:
            raise Refused("null expand")
        if item.count is None:
            return value if isinstance(value, list) else [value]
        # `e..(n)`: a pack is spliced as it is, one value repeated int(n) times (a bool n
        # includes it or not: `0 ..(!squeeze)`); only a compile-time n
        count = self.expr(item.count)
        if not isinstance(count, (ast.IntLiteral, ast.BoolLiteral)):
            raise Refused("count")
        if isinstance(value, list):
            return value
        if count.value <= 0 and not self.droppable(value, bounded=True):
            raise Refused("count")  # computed by the reference, then dropped
        return [value] * max(int(count.value), 0)

    def visit_Subscript(self, node: ast.Subscript) -> Folded:
        base = node.base
        # [constructs of folds/':'/lookups] `x[i, :]` on a tensor: a pack of accesses
        if isinstance(base, ast.Name) and isinstance(self.arrays.get(base.name), np.ndarray) \
                and any(isinstance(i, ast.Slice) for i in node.items):
            return self.full_access(node, self.arrays[base.name])
        if isinstance(base, ast.Name) and base.name in self.arrays:
            array = self.arrays[base.name]
            if array is NULL:
                return NULL  # an absent optional input reads as null; its indices unused
            if not isinstance(array, np.ndarray):
                return self.whole_pack(node, array)
            slots = self.index_slots(node.items)
            if any(isinstance(slot, list) for slot in slots):
                return self.mapped_access(node, slots)
            return replace(node, items=tuple(slots))
        if isinstance(base, ast.Subscript) and isinstance(base.base, ast.Name) and \
                base.base.name in self.arrays:
            return self.pack_item(node)
        # [constructs of folds/':'/lookups] a compile-time pack indexed by a runtime int
        if self.compile_time(base) and len(node.items) == 1 and not node.trailing_comma and \
                not isinstance(node.items[0], ast.Slice):
            lookup = self.constant_lookup(node)
            if lookup is not None:
                return lookup
        # indexing a pack: an index pack, a pack local, a compile-time pack
        pack = self.expr(base)
        if not isinstance(pack, list) or len(node.items) != 1 or node.trailing_comma:
            raise Refused("pack indexing")
        item = node.items[0]
        if isinstance(item, ast.Slice):
            parts = []
            for part in (item.start, item.stop, item.step):
                if part is None:
                    parts.append(None)
                    continue
                value = self.expr(part)
                if not isinstance(value, ast.IntLiteral):
                    raise Refused("slice")
                parts.append(value.value)
            if parts[2] == 0:
                raise Refused("slice step")
            return pack[slice(*parts)]
        position = self.expr(item)
        if isinstance(position, ast.IntLiteral):
            if not -len(pack) <= position.value < len(pack):
                raise Refused("pack index")
            return pack[position.value]
        if isinstance(position, list) and position and \
                all(isinstance(p, ast.IntLiteral) and not isinstance(p.value, bool)
                    and -len(pack) <= p.value < len(pack) for p in position):
            return [pack[p.value] for p in position]
        return self.pick(node, pack, position)

    def pick(self, node: ast.Subscript, pack: list[ast.Expr], position: Folded) -> Folded:
        """`p[j]`: one item of a folded pack chosen at run time by an index symbol j (`offs[ni]`,
        `z[ni]`, `i[j]`), kept as `[..][j]` for the code generation. The reference evaluates the
        whole pack, so every item must be droppable; and j must be in range, its bound at most
        len(p)."""
        if not (isinstance(position, ast.Name) and position.name in self.bounds and
                self.bounds[position.name] <= len(pack)) or \
                not all(self.droppable(v) for v in pack):
            raise Refused("pack index")
        return replace(node, base=ast.ListExpr(tuple(pack), span=node.base.span),
                       items=(position,))

    def pack_item(self, node: ast.Subscript) -> Folded:
        """`xs[k][..]`: an element of one item of a pack of tensors, k one int (range-checked
        where it runs, as on the reference)."""
        base = node.base
        if len(base.items) != 1 or base.trailing_comma:
            raise Refused("pack item")
        pack = self.arrays[base.base.name]
        if pack is NULL:
            return NULL  # an absent optional pack reads as null; item and indices unused
        if not _tensor_pack(pack):
            raise Refused("pack item")
        item = self.expr(base.items[0])
        if item is NULL or isinstance(item, list):
            raise Refused("pack item")
        return replace(node, base=replace(base, items=(item,)),
                       items=tuple(self.index_items(node.items)))

    def whole_pack(self, node: ast.Subscript, pack: Any) -> Folded:
        """`xs[..]` on a whole pack of tensors: that element of every item, in item order (a
        pack), as the item accesses `xs[0][..]`, `xs[1][..]`, ..."""
        if not _tensor_pack(pack):
            raise Refused("pack of tensors")
        items = self.index_items(node.items)
        # the reference resolves this position once, against no extent: a guard `|e|` never
        # skips there, unlike one in an item access
        if any(isinstance(i, ast.Bounded) for i in items):
            raise Refused("guarded index of a pack")
        return [ast.Subscript(ast.Subscript(node.base, (ast.IntLiteral(j, span=node.span),),
                                            span=node.span), tuple(items), span=node.span)
                for j in range(len(pack))]

    def visit_Substitute(self, node: ast.Substitute) -> Folded:
        """`p[k] <- v` on a folded pack `p` with compile-time positions: the pack with those
        items replaced (§2.4); the items replaced must be droppable, since the reference
        evaluates the whole pack."""
        target = node.target
        if len(target.items) != 1 or target.trailing_comma or \
                isinstance(target.items[0], ast.Slice):
            raise Refused("substitution")
        pack = self.expr(target.base)
        value = self.expr(node.value)
        if not isinstance(pack, list) or value is NULL:
            raise Refused("substitution operands")
        position = self.expr(target.items[0])
        positions = position if isinstance(position, list) else [position]
        values = value if isinstance(position, list) else [value]
        if not isinstance(values, list) or len(values) != len(positions) or any(
                not isinstance(p, ast.IntLiteral) or isinstance(p.value, bool) or
                not -len(pack) <= p.value < len(pack) for p in positions):
            raise Refused("substitution positions")
        result = list(pack)
        for p, new in zip(positions, values):
            if isinstance(new, list) or not self.droppable(result[p.value], bounded=True):
                raise Refused("substitution item")
            result[p.value] = new
        return result

    def index_items(self, items: tuple) -> list[ast.Expr]:
        """Index items of a tensor access as scalar index expressions (packs spread with `..`
        spliced); a pack index without `..` (a mapped access, `mapped_access`) is refused."""
        slots = self.index_slots(items)
        if any(isinstance(slot, list) for slot in slots):
            raise Refused("a pack index without '..' here")
        return slots

    def index_slots(self, items: tuple) -> list[Any]:
        """Index items of a tensor access, one entry per dimension: a scalar index expression
        (packs spread with `..` spliced), or the list of the items of a pack index without
        `..`, over which the access is mapped (reference.py `_Mapped`)."""
        result: list[Any] = []
        for item in items:
            if isinstance(item, ast.Slice):
                raise Refused("':' index")
            if isinstance(item, ast.Expand):
                result.extend(self.expand(item))
                continue
            value = self.expr(item)
            if value is NULL:
                raise Refused("null index")
            result.append(value)
        return result

    def mapped_access(self, node: ast.Subscript, slots: list[Any]) -> list[ast.Expr]:
        """`x[i, p]` with p a pack index without `..`: the pack of accesses `x[i, p0]`,
        `x[i, p1]`, .. (reference.py `_Mapped`). The reference computes every index once, then
        resolves the guards, then reads item by item; so only accesses that can neither fail
        nor skip (`droppable`) are folded, where computing them apart is the same (with no
        item at all, the other indices are computed and dropped: they must be droppable)."""
        lengths = {len(slot) for slot in slots if isinstance(slot, list)}
        if len(lengths) != 1:
            raise Refused("pack indices of different lengths")  # a diagnostic on the reference
        accesses = [replace(node, items=tuple(slot[k] if isinstance(slot, list) else slot
                                              for slot in slots))
                    for k in range(lengths.pop())]
        fixed = [slot for slot in slots if not isinstance(slot, list)]
        if not all(self.droppable(a) for a in accesses) or \
                (not accesses and not all(self.droppable(i) for i in fixed)):
            raise Refused("a pack index without '..' on an access not provably in range")
        return accesses

    # ------------------------------------------------------------------ folds, ':', lookups

    def visit_Fold(self, node: ast.Fold) -> Folded:
        """`p op ..` of a folded pack: the fold of the pack `[p0, p1, ..]` of its items, which
        generated code computes as `expr.fold_pack` does on the reference: every item, then the
        left-deep chain `(p0 op p1) op p2 ..` (one item: the item itself, no operation; an
        empty pack: fold_pack's value for it). Only `+ * && || << >>` (the code generation's
        FOLD_OPS), not cumulative (a comparison fold stops at its first false pair)."""
        if node.cumulative or node.op not in FOLD_OPS:
            raise Refused(f"fold '{node.op} ..'")
        pack = self.expr(node.operand)
        if pack is NULL:
            return NULL
        if not isinstance(pack, list) or len(pack) > MAX_FOLD_ITEMS:
            raise Refused("fold operand")
        if not pack:
            # an empty sum of a tensor access is 0 or 0.0 by the tensor's type
            # (FormulaClosures.item_kind); other operands give the int 0
            if isinstance(node.operand, ast.Subscript):
                raise Refused("empty fold of an access")
            return self.constant(fold_pack(node.op, (), False, "any", None), node)
        if len(pack) == 1:
            return pack[0]
        return replace(node, operand=ast.ListExpr(tuple(pack), span=node.operand.span))

    def fold_from(self, node: ast.Binary) -> Folded:
        """`x op .. op init` (types.fold_with_initial): kept with x folded to the pack of its
        items, which generated code computes as `expr.fold_from` on the reference (the items, then
        init, then the fold of the items starting from init); with no items, init itself."""
        fold = node.left
        pack, initial = self.expr(fold.operand), self.expr(node.right)
        if pack is NULL or initial is NULL:
            # both are computed, then the result is null
            if all(self.droppable_folded(v) for v in (pack, initial)):
                return NULL
            raise Refused("null operand")
        if not isinstance(pack, list) or isinstance(initial, list) or \
                len(pack) > MAX_FOLD_ITEMS:
            raise Refused("fold operand")
        if not pack:
            return initial
        return replace(node, left=replace(fold, operand=ast.ListExpr(tuple(pack),
                                                                     span=fold.operand.span)),
                       right=initial)

    def full_access(self, node: ast.Subscript, array: np.ndarray) -> list[ast.Expr]:
        """`x[i, :]`: the pack of its values along the ':' dimensions, row-major, as one access
        each (the reference computes the position once, then reads them in that order).
        Guarded indices beside ':' are refused; with no values at all, the other indices are
        dropped, so they must be droppable."""
        marks: list[ast.Expr | None] = []  # None marks a ':' dimension
        for item in node.items:
            if isinstance(item, ast.Slice):
                if (item.start, item.stop, item.step) != (None, None, None):
                    raise Refused("slice index")  # a diagnostic on the reference
                marks.append(None)
            else:
                marks.extend(self.index_items((item,)))
        fixed = [m for m in marks if m is not None]
        if len(marks) != array.ndim or any(self.guarded(m) for m in fixed):
            raise Refused("':' index")
        ranges = [range(extent) if m is None else (m,) for m, extent in zip(marks, array.shape)]
        accesses = [replace(node, items=tuple(ast.IntLiteral(p, span=node.span)
                                              if isinstance(p, int) else p for p in position))
                    for position in itertools.product(*ranges)]
        if not accesses and not all(self.droppable(m) for m in fixed):
            raise Refused("':' index")
        return accesses

    def constant_lookup(self, node: ast.Subscript) -> Folded | None:
        """`p[k]` of a compile-time pack `p` of scalars of one type and one runtime int `k`
        (`zero_point[i[channel_axis]]`): kept with `k` folded, for the constant lookup of
        the code generation; None where `k` folds to a pack or a literal (pack indexing)."""
        try:
            pack = evaluate(node.base, self.instance.environment(self.profile))
        except Diagnostic:
            raise Refused("compile-time error") from None
        if pack is NULL:
            return NULL  # the reference does not compute the position
        position = self.expr(node.items[0])
        if position is NULL or isinstance(position, (list, ast.IntLiteral, ast.BoolLiteral)):
            return None
        if not isinstance(pack, tuple) or not pack or \
                len({type(v) for v in pack}) != 1 or type(pack[0]) not in (bool, int, float):
            raise Refused("constant pack")
        return replace(node, items=(position,))

    def split_local(self, local: ast.LocalAssign, items: list[ast.Expr], taken: set[str],
                    locals_: list[ast.LocalAssign]) -> list[ast.Expr]:
        """A pack local that may fail (`r = real(i[axes]) * scale + offset`) as one scalar
        local `r__k` per item, appended to `locals_` in item order: every item is still
        computed once per iteration, where the reference computes the pack. Items that may
        skip are refused (the reference computes the whole pack before a later item's skip;
        the split form could fail in an earlier item first). Returns the names standing for
        the items."""
        if any(self.may_skip(v) for v in items):
            raise Refused("pack local")
        names: list[ast.Expr] = []
        for k, item in enumerate(items):
            name = f"{local.name}__{k}"
            if name in taken:
                raise Refused("name clash")
            taken.add(name)
            self.runtime.add(name)
            self.scalar_locals.add(name)
            locals_.append(replace(local, name=name, value=item))
            names.append(ast.Name(name, span=local.span))
        return names

    # ------------------------------------------------------------------ what may be dropped

    @staticmethod
    def guarded(node: ast.Node) -> bool:
        """The (folded) node holds a guarded index `|e|`, at its top or below."""
        return isinstance(node, ast.Bounded) or any(_Folder.guarded(c) for c in children(node))

    def may_skip(self, node: ast.Expr) -> bool:
        """Computing the (folded) node may skip the iteration: it holds a guarded index below
        its top (one at its top is a value, only resolved where it indexes)."""
        return any(self.guarded(c) for c in children(node))

    def droppable_folded(self, value: Folded) -> bool:
        if value is NULL:
            return True
        if isinstance(value, list):
            return all(self.droppable(v) for v in value)
        return self.droppable(value)

    def droppable(self, node: ast.Expr, bounded: bool = False) -> bool:
        """Evaluating the (folded) node can neither fail nor skip the iteration: literals,
        index symbols, int `+ - *` of those, and accesses provably in range. With `bounded`,
        a guarded index `|e|` also counts (its value is only resolved where it indexes)."""
        if isinstance(node, (ast.IntLiteral, ast.BoolLiteral, ast.RealLiteral)):
            return True
        if isinstance(node, ast.Name):
            return node.name in self.bounds
        operands = arithmetic_operands(node)
        if operands is not None:
            return all(self.int_expr(o) for o in operands)
        if isinstance(node, ast.Bounded) and bounded:
            return all(p is None or self.droppable(p)
                       for p in (node.index, node.lower, node.upper))
        if isinstance(node, ast.Subscript) and isinstance(node.base, ast.Name):
            array = self.arrays.get(node.base.name)
            if not isinstance(array, np.ndarray) or len(node.items) != array.ndim:
                return False
            return all((isinstance(i, ast.Name) and i.name in self.bounds and
                        self.bounds[i.name] <= extent) or
                       (isinstance(i, ast.IntLiteral) and not isinstance(i.value, bool) and
                        0 <= i.value < extent)
                       for i, extent in zip(node.items, array.shape))
        return False

    def int_expr(self, node: ast.Expr) -> bool:
        """An int expression that cannot fail (int64 index arithmetic of small values)."""
        if isinstance(node, ast.IntLiteral):
            return not isinstance(node.value, bool)
        if isinstance(node, ast.Name):
            return node.name in self.bounds
        operands = arithmetic_operands(node)
        return operands is not None and all(self.int_expr(o) for o in operands)


def arithmetic_operands(node: ast.Expr) -> list[ast.Expr] | None:
    """The operands of a (folded) `a + b`, `a - b`, `a * b`, or of a fold `[a, b, ..] + ..` or
    `* ..` (as `_Folder.visit_Fold` leaves it); None for any other node."""
    if isinstance(node, ast.Binary) and node.op in ("+", "-", "*"):
        return [node.left, node.right]
    if isinstance(node, ast.Fold) and node.op in ("+", "*") and not node.cumulative and \
            isinstance(node.operand, ast.ListExpr) and \
            not any(isinstance(i, (ast.Expand, ast.Range)) for i in node.operand.items):
        return list(node.operand.items)
    return None


def _tensor_pack(value: Any) -> bool:
    """A pack of tensors that generated code can index: a non-empty list of arrays."""
    return isinstance(value, list) and bool(value) and \
        all(isinstance(a, np.ndarray) for a in value)
