"""The vector engine's expression evaluator (docs/performance.md, "The vector engine"): the
value of an expression over one box, as an `ExprVisitor` with one method per node class.

A value is a Python value (a compile-time subexpression, evaluated once per instance by the
compile-time evaluator, or anything that does not vary over the box), an array over the axes it
depends on, a tuple (a pack) of them, a `Guard` (an index `|e|` before it meets its extent), or
NULL. `active` is the mask of the iterations that evaluate the expression (the branches of `?:`
narrow it); every check (index range, division by zero, int overflow, a null) is made only on
iterations that are live and active, so the vector engine never reports an error the
reference would not: where it cannot be exact it raises `Refused`.
"""

from __future__ import annotations

import itertools
import math
from functools import cached_property
from typing import Any, Callable

import numpy as np

from refinterp.core.diagnostics import Diagnostic
from refinterp.language.expr import Environment, evaluate, fold_from, fold_pack
from refinterp.language.invocation import OperatorInstance
from refinterp.language.types import CASTS, fold_with_initial
from refinterp.language.values import NULL, TensorValue
from refinterp.lower.common import Refused, tests_given_tensor
from refinterp.lower.plan import FULL
from refinterp.lower.vector.access import (Guard, Inputs, Mapped, Read, gather, int_identity,
                                           resolve, strided_view)
from refinterp.lower.vector.space import RUNTIME, Box, FormulaFacts, Mask, anywhere, both
from refinterp.numeric import array_rules as A
from refinterp.numeric import rules
from refinterp.numeric.representation import kind_of
from refinterp.syntax import ast
from refinterp.syntax.visitor import ExprVisitor

_UNSEEN = object()


class FormulaContext:
    """What the evaluation of one formula reads, for every box of a run: the instance, the
    arrays by name, the profile, the formula's facts and the run's prepared inputs."""

    def __init__(self, instance: OperatorInstance, arrays: dict[str, Any],
                 profile: rules.Profile, facts: FormulaFacts, inputs: Inputs) -> None:
        self.instance, self.arrays, self.profile, self.facts, self.inputs = (
            instance, arrays, profile, facts, inputs)
        self.symbols = instance.symbols
        # by id(node): safe, `facts.formula` keeps every node alive (FormulaFacts.folded)
        self.folded = facts.folded.setdefault(profile.name, {})
        shape = facts.shape
        self.runtime = shape.index_names | shape.local_names | frozenset(arrays)

    @cached_property
    def environment(self) -> Environment:
        """For compile-time subexpressions; made when one is first met."""
        return self.instance.environment(self.profile)

    def is_compile_time(self, node: ast.Expr) -> bool:
        """No index, local or tensor in it: the compile-time evaluator computes it."""
        known = self.folded.get(id(node), _UNSEEN)
        if known is not _UNSEEN:
            return known is not RUNTIME
        return self.classify(node)

    def classify(self, node: ast.Expr) -> bool:
        """`is_compile_time` of a node not met before."""
        if isinstance(node, (ast.Bounded, ast.Expand, ast.Zip, ast.Placeholder)):
            return False
        names = self.facts.shape.free_names(node)
        if not names.isdisjoint(self.runtime):
            return False
        symbols = self.symbols
        return all(not isinstance(symbols.get(n), TensorValue) for n in names)


class BoxEvaluator(ExprVisitor[Any]):
    """The value of an expression over one box: `visit(node, active)`."""

    complete = True

    def __init__(self, context: FormulaContext, box: Box) -> None:
        self.context, self.box = context, box
        self.arrays, self.profile, self.symbols = context.arrays, context.profile, context.symbols

    def visit(self, node: Any, *args: Any) -> Any:
        """The value of `node` over the box, for the iterations of `active` (args[0]); a
        compile-time subexpression is evaluated once per instance and profile."""
        folded = self.context.folded
        value = folded.get(id(node), _UNSEEN)
        if value is RUNTIME:
            return super().visit(node, *args)
        if value is not _UNSEEN:
            return value
        if not self.context.classify(node):
            folded[id(node)] = RUNTIME
            return super().visit(node, *args)
        try:
            value = evaluate(node, self.context.environment)
        except Diagnostic:
            raise Refused("a compile-time error") from None
        folded[id(node)] = value
        return value

    # ------------------------------------------------------------------ leaves

    def visit_literal(self, node: ast.IntLiteral | ast.RealLiteral | ast.BoolLiteral,
                      active: Mask) -> Any:
        return node.value

    visit_IntLiteral = visit_RealLiteral = visit_BoolLiteral = visit_literal

    def visit_Constant(self, node: ast.Constant, active: Mask) -> Any:
        return math.inf if node.name == "inf" else math.pi

    def visit_Name(self, node: ast.Name, active: Mask) -> Any:
        if node.name in self.box.frame:
            return self.box.frame[node.name]
        if node.name in self.symbols and not isinstance(self.symbols[node.name], TensorValue):
            return self.symbols[node.name]
        raise Refused(f"'{node.name}' is not a value here")

    def visit_Member(self, node: ast.Member, active: Mask) -> Any:
        if isinstance(node.base, ast.Name) and node.base.name in self.symbols:
            base = self.symbols[node.base.name]
            if isinstance(base, TensorValue):
                return base.shape if node.name == "shape" else len(base.shape)
            return len(base) if isinstance(base, tuple) else NULL
        raise Refused("a member of a computed value")

    def unsupported(self, node: ast.Node, active: Mask) -> Any:
        raise Refused(f"{type(node).__name__} in a formula")

    visit_StringLiteral = visit_Placeholder = visit_Expand = visit_Zip = unsupported
    visit_Range = visit_Slice = unsupported

    # ------------------------------------------------------------------ operations

    def lift(self, value: Any, active: Mask, array_rule: Callable, scalar_rule: Callable
             ) -> Any:
        """A one-operand rule item by item (packs), on arrays or on Python values."""
        if value is NULL:
            return NULL
        if isinstance(value, tuple):
            return tuple(self.lift(v, active, array_rule, scalar_rule) for v in value)
        if isinstance(value, Guard):
            raise Refused("a guarded index used as a number")
        if isinstance(value, np.ndarray):
            return array_rule(value, both(self.box.live, active))
        try:
            return scalar_rule(value)
        except rules.NumericError:
            raise Refused("a numeric error") from None

    def numeric2(self, op: str, a: Any, b: Any, active: Mask) -> Any:
        """`a op b` by the numeric rules, item by item on packs."""
        if a is NULL or b is NULL:
            return NULL
        if isinstance(a, tuple) or isinstance(b, tuple):
            length = len(a) if isinstance(a, tuple) else len(b)
            a = a if isinstance(a, tuple) else (a,) * length
            b = b if isinstance(b, tuple) else (b,) * length
            if len(a) != len(b):
                raise Refused("packs of different lengths")
            return tuple(self.numeric2(op, x, y, active) for x, y in zip(a, b))
        if isinstance(a, Guard) or isinstance(b, Guard):
            raise Refused("a guarded index used as a number")
        if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
            same = int_identity(op, a, b)
            if same is not None:
                return same
            return A.binary(op, a, b, self.profile, both(self.box.live, active))
        try:
            return rules.binary(op, a, b, self.profile)
        except rules.NumericError:
            raise Refused("a numeric error") from None

    def visit_Unary(self, node: ast.Unary, active: Mask) -> Any:
        if tests_given_tensor(node, self.symbols, self.box.frame):
            return True
        operand = self.visit(node.operand, active)
        if node.op == "?":
            return operand is not NULL
        return self.lift(operand, active, lambda v, m: A.unary(node.op, v, self.profile, m),
                         lambda v: rules.unary(node.op, v, self.profile))

    def visit_Binary(self, node: ast.Binary, active: Mask) -> Any:
        if fold_with_initial(node):
            return self.fold_with_initial(node, active)
        left = self.visit(node.left, active)
        if node.op == "??":
            return left if left is not NULL else self.visit(node.right, active)
        right = self.visit(node.right, active)
        if node.op in ("is", "in"):
            if isinstance(left, np.ndarray) or isinstance(right, np.ndarray) or \
                    _has_array(left) or _has_array(right):
                raise Refused(f"'{node.op}' on tensor values")
            if left is NULL or right is NULL:
                return NULL
            if node.op == "is":
                return type(left) is type(right) and left == right
            return tuple(x in right for x in left) if isinstance(left, tuple) else left in right
        return self.numeric2(node.op, left, right, active)

    def visit_Select(self, node: ast.Select, active: Mask) -> Any:
        flag = self.visit(node.cond, active)
        if flag is NULL:
            return NULL
        if isinstance(flag, (bool, np.bool_)) or \
                (isinstance(flag, np.ndarray) and flag.ndim == 0 and flag.dtype == np.bool_):
            if flag:
                return self.visit(node.then, active)
            return self.visit(node.otherwise, active) if node.otherwise is not None else NULL
        if isinstance(flag, tuple):  # item by item, both branches evaluated (as the reference)
            a = self.visit(node.then, active)
            b = self.visit(node.otherwise, active) if node.otherwise is not None else NULL
            items = []
            for i, f in enumerate(flag):
                x = a[i] if isinstance(a, tuple) else a
                y = b[i] if isinstance(b, tuple) else b
                if not isinstance(f, np.ndarray):
                    items.append(x if f else y)
                    continue
                # a computed condition per item: chosen cell by cell (both were evaluated)
                if f.dtype != np.bool_ or any(v is NULL or isinstance(v, (tuple, Guard))
                                              for v in (x, y)):
                    raise Refused("a pack of computed conditions choosing null or packed "
                                   "items in '?:'")
                x, y = A.as_array(x), A.as_array(y)
                if kind_of(x) != kind_of(y):
                    raise Refused("branches of '?:' of different types")
                items.append(np.where(f, x, y))
            return tuple(items)
        if not isinstance(flag, np.ndarray) or flag.dtype != np.bool_:
            raise Refused("a non-bool condition in '?:'")
        then_mask, else_mask = both(active, flag), both(active, ~flag)
        chosen = []
        for branch, mask in ((node.then, then_mask), (node.otherwise, else_mask)):
            if not anywhere(both(self.box.live, mask)):
                chosen.append(None)
                continue
            value = self.visit(branch, mask) if branch is not None else NULL
            if value is NULL or isinstance(value, (tuple, Guard)):
                raise Refused("a null or packed branch of '?:'")
            chosen.append(value)
        a, b = chosen
        if a is None:
            return b if b is not None else NULL
        if b is None:
            return a
        a, b = A.as_array(a), A.as_array(b)
        if kind_of(a) != kind_of(b):
            raise Refused("branches of '?:' of different types")
        return np.where(flag, a, b)

    def repeat_count(self, item: ast.Expand, active: Mask) -> int:
        count = self.visit(item.count, active)
        if not isinstance(count, int):
            raise Refused("a repeat count that is not an int")
        return count

    def visit_ListExpr(self, node: ast.ListExpr, active: Mask) -> Any:
        items: list[Any] = []
        for item in node.items:
            if isinstance(item, ast.Expand):
                value = self.visit(item.operand, active)
                if item.count is not None and not isinstance(value, tuple):
                    value = (value,) * self.repeat_count(item, active)
                part = value if isinstance(value, tuple) else (value,)
            elif isinstance(item, ast.Range):
                start, stop = self.visit(item.start, active), self.visit(item.stop, active)
                step = self.visit(item.step, active) if item.step is not None else 1
                if not all(isinstance(v, int) for v in (start, stop, step)):
                    raise Refused("a range with computed ends")
                part = tuple(range(start, stop, step))
            else:
                part = (self.visit(item, active),)
            if any(v is NULL for v in part):
                return NULL
            items.extend(part)
        return tuple(items)

    def visit_Builtin(self, node: ast.Builtin, active: Mask) -> Any:
        return self.call(node.name, node.args, active)

    def visit_Call(self, node: ast.Call, active: Mask) -> Any:
        if len(node.callee) != 1:
            raise Refused("a qualified call in a formula")
        return self.call(node.callee[0], node.args, active)

    def call(self, name: str, args: tuple, active: Mask) -> Any:
        """A cast or a one-argument built-in function."""
        target = self.context.instance.dtypes.get(name, name)
        if target in CASTS:
            if not args:
                return rules.default_value(target)
            return self.lift(self.visit(args[0], active), active,
                             lambda v, m: A.cast(target, v, self.profile, m),
                             lambda v: rules.cast(target, v, self.profile))
        if len(args) != 1:
            raise Refused(f"'{name}' with {len(args)} arguments")
        return self.lift(self.visit(args[0], active), active,
                         lambda v, m: A.builtin(name, v, self.profile, m),
                         lambda v: rules.builtin(name, v, self.profile))

    def visit_Fold(self, node: ast.Fold, active: Mask) -> Any:
        if node.op not in ("+", "*", "&&", "||", "<<", ">>") and not node.cumulative:
            raise Refused(f"the fold '{node.op} ..' on tensor values")
        pack = self.visit(node.operand, active)
        if pack is NULL:
            return NULL
        if not isinstance(pack, tuple):
            raise Refused("a fold of a non-pack")
        base = "any"
        if isinstance(node.operand, ast.Subscript) and isinstance(node.operand.base, ast.Name):
            array = self.arrays.get(node.operand.base.name)
            if isinstance(array, np.ndarray):
                base = kind_of(array)
        return fold_pack(node.op, pack, node.cumulative, base,
                         lambda op, a, b: self.numeric2(op, a, b, active))

    def fold_with_initial(self, node: ast.Binary, active: Mask) -> Any:
        """`x op .. op init`: the pack, then the initial value, then `expr.fold_from` (THE
        rule, as the reference and the compile-time evaluator); an initial pack gives one
        fold per item."""
        fold = node.left
        if node.op not in ("+", "*", "&&", "||", "<<", ">>"):
            raise Refused(f"the fold '{node.op} ..' on tensor values")
        pack, start = self.visit(fold.operand, active), self.visit(node.right, active)
        if pack is NULL or start is NULL:
            return NULL
        if not isinstance(pack, tuple):
            raise Refused("a fold of a non-pack")

        def binary(op: str, a: Any, b: Any) -> Any:
            return self.numeric2(op, a, b, active)
        if isinstance(start, tuple):
            return tuple(fold_from(node.op, pack, value, binary) for value in start)
        return fold_from(node.op, pack, start, binary)

    # ------------------------------------------------------------------ packs

    def pick(self, pack: tuple, item: ast.IndexItem, active: Mask) -> Any:
        """An item or a selection of a pack (§2.4); an index array gathers from a pack of
        numbers."""
        if isinstance(item, ast.Slice):
            parts = [self.visit(p, active) if p is not None else None
                     for p in (item.start, item.stop, item.step)]
            if not all(p is None or isinstance(p, int) for p in parts):
                raise Refused("a pack slice with computed ends")
            return tuple(pack[slice(*parts)])
        position = self.visit(item, active)
        if position is NULL:
            return NULL
        if isinstance(position, tuple):
            if not all(isinstance(p, (int, bool)) for p in position):
                raise Refused("a computed pack selection")
            if position and isinstance(position[0], bool):
                return tuple(v for v, keep in zip(pack, position) if keep)
            return tuple(pack[p] for p in position)
        if isinstance(position, int) and not isinstance(position, bool):
            if not -len(pack) <= position < len(pack):
                raise Refused("a pack index out of range")
            return pack[position]
        if isinstance(position, np.ndarray) and kind_of(position) == "int" and pack and \
                all(not isinstance(v, (tuple, Guard)) and v is not NULL for v in pack):
            if len({kind_of(v) for v in pack}) != 1:
                raise Refused("a pack of mixed types indexed by an array")
            effective = both(self.box.live, active)
            bad = (position < -len(pack)) | (position >= len(pack))
            if anywhere(both(bad, effective)) and bad.any():
                raise Refused("a pack index out of range")
            position = np.clip(position, -len(pack), len(pack) - 1)
            if not any(isinstance(v, np.ndarray) for v in pack):
                return A.as_array(np.array(pack))[position]
            # items that are arrays over the box: item position[...] of each iteration
            arrays = [A.as_array(v) for v in pack]
            *items, position = np.broadcast_arrays(*arrays, position)
            position = np.where(position < 0, position + len(pack), position)
            return np.take_along_axis(np.stack(items), position[np.newaxis], axis=0)[0]
        raise Refused("a pack indexed by a computed value")

    def visit_Substitute(self, node: ast.Substitute, active: Mask) -> Any:
        values = self.visit(node.target.base, active)
        new = self.visit(node.value, active)
        if values is NULL or new is NULL:
            return NULL
        if not isinstance(values, tuple):
            raise Refused("a substitution into a non-pack")
        chosen = self.pick(tuple(range(len(values))), node.target.items[0], active)
        result = list(values)
        if isinstance(chosen, tuple):
            news = new if isinstance(new, tuple) else (new,) * len(chosen)
            for position, value in zip(chosen, news):
                result[position] = value
        elif isinstance(chosen, int):
            result[chosen] = new
        else:
            raise Refused("a computed substitution position")
        return tuple(result)

    def visit_Bounded(self, node: ast.Bounded, active: Mask) -> Any:
        raw = self.visit(node.index, active)
        low = self.visit(node.lower, active) if node.lower is not None else None
        high = self.visit(node.upper, active) if node.upper is not None else None
        if isinstance(raw, tuple):
            lows = low if isinstance(low, tuple) else (low,) * len(raw)
            highs = high if isinstance(high, tuple) else (high,) * len(raw)
            return tuple(Guard(r, lo, hi) for r, lo, hi in zip(raw, lows, highs))
        return Guard(raw, low, high)

    # ------------------------------------------------------------------ tensor access

    def tensor_of(self, node: ast.Subscript) -> tuple[str, ast.Expr | None] | None:
        """(tensor name, pack item index or None) if `node` reads a tensor (`x[...]`,
        `xs[k][...]`); None for pack indexing."""
        base, item = node.base, None
        if isinstance(base, ast.Subscript) and isinstance(base.base, ast.Name) and \
                base.base.name in self.arrays and not base.trailing_comma:
            item, base = base.items[0], base.base
        if isinstance(base, ast.Name) and base.name in self.arrays:
            return base.name, item
        return None

    def visit_Subscript(self, node: ast.Subscript, active: Mask) -> Any:
        tensor = self.tensor_of(node)
        if tensor is not None:
            return self.access(node, tensor[0], tensor[1], active, padding=False).value
        pack = self.visit(node.base, active)
        if pack is NULL:
            return NULL
        if len(node.items) != 1 or node.trailing_comma or not isinstance(pack, tuple):
            raise Refused("an unusual pack index")
        return self.pick(pack, node.items[0], active)

    def factor(self, node: ast.Expr, active: Mask) -> Read:
        """A factor of a `+=` contraction: a factor that is itself a tensor access may read a
        zero-padded view where a guarded index leaves the tensor (nothing inside it may)."""
        if isinstance(node, ast.Subscript):
            tensor = self.tensor_of(node)
            if tensor is not None:
                return self.access(node, tensor[0], tensor[1], active, padding=True)
        return Read(self.visit(node, active))

    def access(self, node: ast.Subscript, name: str, item: ast.Expr | None, active: Mask,
               padding: bool) -> Read:
        """A tensor read over the box: a strided view (reading zero padding only with
        `padding`), else a gather."""
        target = self.arrays[name]
        if target is NULL:
            return Read(NULL)
        k = None
        if item is not None:
            k = self.visit(item, active)
            if not isinstance(target, list) or not isinstance(k, int) or \
                    isinstance(k, bool) or not 0 <= k < len(target):
                raise Refused("a pack item index that is not a valid int")
            target = target[k]
        if isinstance(target, list):
            raise Refused("a whole pack of tensors read at once")
        raw, affine_form = self.index_values(node.items, active, storing=False)
        mapped = [p for p in raw if isinstance(p, Mapped)]
        if mapped:  # `x[i, p]`, p a pack without `..`: one read per item of p, in item order
            if len({len(p.values) for p in mapped}) > 1 or any(p is FULL for p in raw):
                raise Refused("a pack index without '..' of another length or beside ':'")
            return Read(tuple(
                self.read(name, k, [p.values[j] if isinstance(p, Mapped) else p for p in raw],
                          target, affine_form, False, active).value
                for j in range(len(mapped[0].values))))
        return self.read(name, k, raw, target, affine_form, padding, active)

    def read(self, name: str, k: int | None, raw: list[Any], target: np.ndarray,
             affine_form: bool, padding: bool, active: Mask) -> Read:
        """`target` (tensor `name`, pack item k) at the indices `raw`: a strided view where
        they are affine (reading zero padding only with `padding`), else a gather."""
        if affine_form:
            found = strided_view(self.box, self.context.inputs, (name, k), raw, target, padding)
            if found is not None:
                return found
        positions = self.resolved(raw, active, target.shape)
        full = [d for d, p in enumerate(positions) if p is FULL]
        if not full:
            return Read(gather(self.box, target, positions))
        values = []
        for combination in itertools.product(*(range(target.shape[d]) for d in full)):
            chosen = list(positions)
            for d, v in zip(full, combination):
                chosen[d] = v
            values.append(gather(self.box, target, chosen))
        return Read(tuple(values))

    def index_values(self, items: tuple, active: Mask, storing: bool
                     ) -> tuple[list[Any], bool]:
        """The value of each dimension's index (packs spread with `..` expand in place, a pack
        without `..` is one `Mapped` dimension; FULL for `:`), and whether they may form a
        strided view (no `:`, no repeat count)."""
        raw: list[Any] = []
        affine_form = True
        for item in items:
            if isinstance(item, ast.Slice):
                if storing or (item.start, item.stop, item.step) != (None, None, None):
                    raise Refused("':' in a store or a slice index")
                raw.append(FULL)
                affine_form = False
                continue
            expanded = isinstance(item, ast.Expand)
            value = self.visit(item.operand if expanded else item, active)
            if value is NULL:
                raise Refused("a null index")
            if not expanded and isinstance(value, tuple):
                raw.append(Mapped(value))
                continue
            if expanded and item.count is not None:
                affine_form = False
                if not isinstance(value, tuple):
                    value = (value,) * self.repeat_count(item, active)
            raw.extend(value if isinstance(value, tuple) else (value,))
        return raw, affine_form

    def resolved(self, raw: list[Any], active: Mask, shape: tuple) -> list[Any]:
        """The indices with their guards resolved against the extents (`resolve`)."""
        if any(isinstance(p, Mapped) for p in raw):
            raise Refused("a pack index without '..' in a store")
        if len(raw) != len(shape):
            raise Refused("an access with the wrong number of indices")
        return [p if p is FULL else resolve(self.box, p, extent, active)
                for p, extent in zip(raw, shape)]

    def positions(self, items: tuple, active: Mask, shape: tuple, storing: bool = False
                  ) -> list[Any]:
        """The index of each dimension (int, int array or FULL), guards resolved: a skipped
        iteration leaves the live mask; an unguarded index out of range on an evaluated
        iteration is a Refused (the reference reports it)."""
        return self.resolved(self.index_values(items, active, storing)[0], active, shape)

    # ------------------------------------------------------------------ formula parts

    def product_factors(self, node: ast.Expr) -> list[ast.Expr]:
        """The operands of a product chain `a * b * c` (left-associated), looking through
        `?:` with a compile-time condition; else [node]."""
        if isinstance(node, ast.Select) and self.context.is_compile_time(node.cond):
            flag = self.visit(node.cond, None)
            if isinstance(flag, bool):
                chosen = node.then if flag else node.otherwise
                return self.product_factors(chosen) if chosen is not None else [node]
        if isinstance(node, ast.Binary) and node.op == "*":
            return self.product_factors(node.left) + [node.right]
        return [node]


def truth(flag: Any) -> Any:
    """A condition's value: True, False or a bool mask."""
    if flag is NULL:
        raise Refused("a null condition")
    if isinstance(flag, tuple):
        parts = [truth(f) for f in flag]
        if any(p is False for p in parts):
            return False
        masks = [p for p in parts if p is not True]
        return np.logical_and.reduce(np.broadcast_arrays(*masks)) if masks else True
    if isinstance(flag, np.bool_):
        return bool(flag)
    if isinstance(flag, np.ndarray):
        if flag.dtype != np.bool_:
            raise Refused("a condition that is not bool")
        return flag
    if not isinstance(flag, bool):
        raise Refused("a condition that is not bool")
    return flag


def _has_array(value: Any) -> bool:
    return isinstance(value, tuple) and any(isinstance(v, np.ndarray) or _has_array(v)
                                            for v in value)
