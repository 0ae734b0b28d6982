"""The compile-time expression evaluator (spec §2.4, null propagation §2.4.1).

`evaluate(expr, env)` type-checks the expression (refinterp.language.types) and then walks the tree.
Numbers go through refinterp.numeric.rules, the one place for numeric rules; the rules for packs,
folds, null propagation, selection and formatting live here, each citing its paragraph. Every
decision where the spec is silent is listed in docs/semantics.md ("Packs, folds, selection and
null").
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable, Iterator, Mapping, MutableMapping

from refinterp.numeric import rules
from refinterp.numeric.symbolic import identical
from refinterp.core.diagnostics import EvalDiagnostic
from refinterp.core.source import Span
from refinterp.syntax import ast
from refinterp.syntax.visitor import ExprVisitor, first_operand
from refinterp.language.types import (
    CASTS, Type, TypeScope, check_expr, fold_with_initial, head, type_of_value,
)
from refinterp.language.values import NULL, TensorValue, Value, format_inserted


# items of one compile-time pack: a longer one is a diagnostic, not a memory blow-up (the
# limit of a pack of tensors is numeric.representation.MAX_PACK_LENGTH)
MAX_VALUE_PACK_LENGTH = 10_000_000


@dataclass
class Environment:
    """Values of the symbols an expression may use, generic type bindings, and the profile."""

    values: MutableMapping[str, Value] = field(default_factory=dict)
    types: dict[str, Type] = field(default_factory=dict)
    dtypes: dict[str, str] = field(default_factory=dict)          # generic name -> bound
    dtype_bindings: dict[str, str] = field(default_factory=dict)  # generic name -> concrete
    profile: rules.Profile = rules.SPEC

    def scope(self) -> TypeScope:
        """The types of the symbols, each worked out when the checker first asks for it: an
        expression reads a few names of an environment that may hold hundreds (every tensor of
        a graph, for `x.shape`)."""
        return TypeScope(ValueTypes(self.values, self.types), dict(self.dtypes))


class ValueTypes(Mapping[str, Type]):
    """The type of each value of `values`: the declared one in `types`, else the value's own
    (`type_of_value`), computed on first lookup and kept."""

    def __init__(self, values: Mapping[str, Value], types: Mapping[str, Type]) -> None:
        self._values = values
        self._types = types
        self._known: dict[str, Type] = {}

    def __getitem__(self, name: str) -> Type:
        known = self._known.get(name)
        if known is None:
            value = self._values[name]
            known = self._known[name] = self._types.get(name) or type_of_value(value)
        return known

    def __iter__(self) -> Iterator[str]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)


def evaluate(expr: ast.Expr, env: Environment | None = None) -> Value:
    """Type-check and evaluate a compile-time expression."""
    env = env or Environment()
    return evaluate_checked(expr, env, check_expr(expr, env.scope()))


def evaluate_checked(expr: ast.Expr, env: Environment, types: dict[int, Type]) -> Value:
    """Evaluate an expression checked by `check_expr` (`types`). Flat chains of any length are
    evaluated without recursion along them; an expression nested too deeply otherwise is a
    diagnostic at its start."""
    try:
        return Evaluator(env, types).eval(expr)
    except RecursionError:
        raise EvalDiagnostic("nesting too deep to evaluate", head(expr.span)) from None


class Evaluator(ExprVisitor[Value]):
    """Evaluates one checked expression tree, one `visit_<Class>` rule per expression class;
    `types` are the checker's types of its nodes (`check_expr`)."""

    complete = True

    def __init__(self, env: Environment, types: dict[int, Type]) -> None:
        self.env = env
        self.types = types  # by id() of the nodes of the tree evaluated, which the caller holds
        self.profile = env.profile

    def fail(self, node: ast.Node, message: str) -> EvalDiagnostic:
        return EvalDiagnostic(message, node.span)

    def numeric(self, node: ast.Node, function: Callable, *args: Value) -> Value:
        """Apply a numeric rule (`refinterp.numeric.rules`), turning its NumericError into a
        diagnostic at `node`."""
        try:
            return function(*args, self.profile)
        except rules.NumericError as error:
            raise self.fail(node, error.message) from None

    def item_base(self, node: ast.Node) -> str:
        """The (concrete) base type inferred for a node, generics resolved."""
        base = self.types[id(node)].base
        return self.env.dtype_bindings.get(base, base)

    # ------------------------------------------------------------------ dispatch

    def eval(self, node: ast.Expr) -> Value:
        """The value of a checked expression. A long left-deep chain (`1 + 1 + ... + 1`) is
        evaluated from its deepest node up, each rule finding its first operand's value ready:
        every rule evaluates that operand first, unconditionally (`first_evaluated`)."""
        return self.visit_chain(node, first_evaluated)

    def visit_IntLiteral(self, node: ast.IntLiteral) -> Value:
        return node.value

    visit_RealLiteral = visit_BoolLiteral = visit_IntLiteral

    def visit_Constant(self, node: ast.Constant) -> Value:
        return math.inf if node.name == "inf" else math.pi

    def visit_Name(self, node: ast.Name) -> Value:
        return self.env.values[node.name]

    def visit_Builtin(self, node: ast.Builtin) -> Value:
        return self.eval_builtin(node, node.name, node.args[0])

    def visit_Call(self, node: ast.Call) -> Value:
        name = node.callee[0]
        if name in CASTS or name in self.env.dtypes:
            return self.eval_cast(node, name)
        return self.eval_builtin(node, name, node.args[0])

    def cannot_evaluate(self, node: ast.Node) -> Value:
        """A form the checker rejects outside a list or index (or a node that is no
        expression)."""
        raise self.fail(node, f"cannot evaluate {type(node).__name__}")

    visit_Expand = visit_Zip = visit_Bounded = visit_Placeholder = cannot_evaluate
    visit_Range = visit_Slice = generic_visit = cannot_evaluate

    # ------------------------------------------------------------------ element-wise core

    def elementwise(self, node: ast.Node, function: Callable[..., Value],
                    *operands: Value) -> Value:
        """Apply `function` item by item (§2.4: packs operate element-wise, single values
        broadcast, packs must have equal lengths); null anywhere gives null (§2.4.1)."""
        if any(v is NULL for v in operands):
            return NULL
        lengths = {len(v) for v in operands if isinstance(v, tuple)}
        if not lengths:
            return function(*operands)
        if len(lengths) > 1:
            raise self.fail(node, f"packs of different lengths {sorted(lengths)} in an "
                                  f"element-wise operation")
        length = lengths.pop()
        columns = [v if isinstance(v, tuple) else (v,) * length for v in operands]
        return tuple(function(*row) for row in zip(*columns))

    # ------------------------------------------------------------------ forms

    def visit_StringLiteral(self, node: ast.StringLiteral) -> Value:
        pieces = []
        for part in node.parts:
            if isinstance(part, str):
                pieces.append(part)
                continue
            value = self.eval(part)
            if value is NULL:
                return NULL  # §2.4.1: a formatted string with a null insertion is null
            pieces.append(format_inserted(value))
        return "".join(pieces)

    def visit_ListExpr(self, node: ast.ListExpr) -> Value:
        items: list[Value] = []
        for item in node.items:
            if isinstance(item, ast.Range):
                produced = self.eval_range(item)
            elif isinstance(item, ast.Expand):
                produced = self.eval_expand(item)
            else:
                produced = (self.eval(item),)
            if produced is NULL or any(v is NULL for v in produced):
                return NULL  # §2.4.1: a list holding a null is null
            items.extend(produced)
        return tuple(items)

    def eval_range(self, item: ast.Range) -> Value:
        start, stop = self.eval(item.start), self.eval(item.stop)
        step = self.eval(item.step) if item.step is not None else 1
        if NULL in (start, stop, step):
            return NULL
        for part, value in ((item.start, start), (item.stop, stop), (item.step, step)):
            if isinstance(value, rules.IntInfinity):
                raise self.fail(part or item, f"a range cannot run from, to or by {value}; "
                                              f"it only marks extreme values (for comparisons, "
                                              f"minimum and maximum)")
        if step == 0:
            raise self.fail(item.step or item, "a range stride must not be 0")
        produced = range(start, stop, step)
        # len() of a range is limited to the machine's index size; its length is not
        self.check_length(item, max(0, (stop - start + step - (1 if step > 0 else -1)) // step))
        return tuple(produced)

    def check_length(self, node: ast.Node, length: int) -> None:
        check_length(node.span, length)

    def eval_expand(self, item: ast.Expand) -> Value:
        if isinstance(item.operand, ast.Zip):
            packs = [self.eval(p) for p in item.operand.items]
            if any(p is NULL for p in packs):
                return NULL
            if len({len(p) for p in packs}) > 1:
                raise self.fail(item.operand, f"zipped packs must have equal lengths; got "
                                              f"{[len(p) for p in packs]}")
            return tuple(v for row in zip(*packs) for v in row)
        value = self.eval(item.operand)
        if item.count is None:
            return value
        count = self.eval(item.count)
        if value is NULL or count is NULL:
            return NULL
        if isinstance(count, bool):
            count = int(count)
        if count < 0:
            raise self.fail(item.count, f"a repetition count must not be negative; got {count}")
        if isinstance(value, tuple):  # `b..(n)` on a pack: an expansion with a length check
            if len(value) != count:
                raise self.fail(item.count, f"the pack has length {len(value)}, not {count}")
            return value
        self.check_length(item, count)
        return (value,) * count

    def visit_Unary(self, node: ast.Unary) -> Value:
        if node.op == "?":
            return self.eval(node.operand) is not NULL  # §2.4: never null
        operand = self.eval(node.operand)
        return self.elementwise(node, lambda a: self.numeric(node, rules.unary, node.op, a),
                                operand)

    def visit_Binary(self, node: ast.Binary) -> Value:
        op = node.op
        if op == "??":  # §2.4 null coalescing; lazy: the right side only when needed
            return self.eval_coalesce(node)
        if fold_with_initial(node):
            return self.eval_fold_with_initial(node)
        if op == "=>":
            return self.eval_implication(node)
        left, right = self.eval(node.left), self.eval(node.right)
        if op == "in":
            if left is NULL or right is NULL:
                return NULL
            return tuple(v in right for v in left) if isinstance(left, tuple) else left in right
        if op == "is":
            return self.elementwise(node, _identical, left, right)
        return self.elementwise(
            node, lambda a, b: self.numeric(node, rules.binary, op, a, b), left, right)

    def eval_implication(self, node: ast.Binary) -> Value:
        """`a => b` (§2.4, implication): b is evaluated only when some item of a holds, so a
        guard keeps its consequence from being evaluated where it is undefined (the stdlib's
        `input_volume != 0 => input_volume % shape_volume == 0`, spec L1914); a null a is null
        (§2.4.1) without evaluating b."""
        left = self.eval(node.left)
        if left is NULL:
            return NULL
        if isinstance(left, tuple) and left and not any(left):
            return tuple(True for _ in left)
        if left is False:
            return True
        right = self.eval(node.right)
        return self.elementwise(
            node, lambda a, b: self.numeric(node, rules.binary, "=>", a, b), left, right)

    def eval_coalesce(self, node: ast.Binary) -> Value:
        """`a ?? b ?? c` groups to the right, `a ?? (b ?? c)`: the first non-null of its
        operands, evaluated left to right until one is (a loop along the chain)."""
        while True:
            left = self.eval(node.left)
            if left is not NULL:
                return left
            right = node.right
            if not (isinstance(right, ast.Binary) and right.op == "??"):
                return self.eval(right)
            node = right

    def eval_fold_with_initial(self, node: ast.Binary) -> Value:
        """`x + .. + 42`: `fold_from` (an initial pack: one fold per item)."""
        fold = node.left
        assert isinstance(fold, ast.Fold)
        pack, initial = self.eval(fold.operand), self.eval(node.right)
        if pack is NULL or initial is NULL:
            return NULL

        def binary(op: str, a: Value, b: Value) -> Value:
            return self.numeric(node, rules.binary, op, a, b)
        return self.elementwise(node, lambda init: fold_from(node.op, pack, init, binary),
                                initial)

    def visit_Select(self, node: ast.Select) -> Value:
        """§2.4 select. A single condition evaluates only the taken branch, so a null in the
        other branch does not matter (`?x ? x : 0`) — unless the taken branch is a single value
        and the other a pack (`repeated`); a pack condition selects item by item. An else-chain
        `c0 ? a0 : c1 ? a1 : ...` of single conditions is a loop along it."""
        cond = self.eval(node.cond)
        while not isinstance(cond, tuple):
            if cond is NULL:
                return NULL
            taken, other = (node.then, node.otherwise) if cond else (node.otherwise, node.then)
            if taken is None:
                return NULL
            if self.types[id(node)].packed and not self.types[id(taken)].packed:
                return self.repeated(taken, other)
            if taken is not node.otherwise or not isinstance(taken, ast.Select):
                return self.eval(taken)
            node = taken
            cond = self.eval(node.cond)
        then = self.eval(node.then)
        otherwise = self.eval(node.otherwise) if node.otherwise is not None else NULL
        for branch in (then, otherwise):
            if isinstance(branch, tuple) and len(branch) != len(cond):
                raise self.fail(node, f"a select with a condition of length {len(cond)} needs "
                                      f"branches of that length; got {len(branch)}")
        chosen = []
        for index, flag in enumerate(cond):
            branch = then if flag else otherwise
            if branch is NULL:
                return NULL  # an item comes from a null branch: the whole pack is null
            chosen.append(branch[index] if isinstance(branch, tuple) else branch)
        return tuple(chosen)

    def repeated(self, single: ast.Expr, pack: ast.Expr) -> Value:
        """§2.4 Select: "One or more arguments may also be packs, in which case the result is a
        pack ... When the conditions is not a pack, the other two arguments need not be of the
        same length." **(decision)** A single value taken under a single condition beside a
        pack branch (`c ? 0.5 * scale : 0.0`) is repeated to the length of the pack branch, as
        a single operand pairs with every item of a pack in a binary operator (so the result
        is a pack, as `types.Checker.select_rule` says). The pack branch is evaluated for its
        length although it is not taken: its errors are the select's, and a null pack branch
        (which has no length) is a diagnostic (docs/semantics.md "Select")."""
        value = self.eval(single)
        if value is NULL:
            return NULL
        why = ("the select takes its single value, repeated to the length of this pack "
               "branch (§2.4 Select)")
        try:
            items = self.eval(pack)
        except EvalDiagnostic as diag:
            diag.notes.append(f"{why}; evaluating that branch failed")
            raise
        if items is NULL:
            raise EvalDiagnostic("this pack branch of a select is null, so it has no length",
                                 pack.span, [why])
        assert isinstance(items, tuple)
        return (value,) * len(items)

    def visit_Fold(self, node: ast.Fold) -> Value:
        pack = self.eval(node.operand)
        if pack is NULL:
            return NULL
        return fold_pack(node.op, pack, node.cumulative, self.item_base(node.operand),
                         lambda op, a, b: self.numeric(node, rules.binary, op, a, b))

    # ------------------------------------------------------------------ indexing

    def indices(self, node: ast.Node, item: ast.IndexItem, length: int) -> list[int] | int:
        """Positions selected by an index of a pack (or string) of `length` items: an int for a
        single index, a list otherwise. Null propagates as NULL."""
        if isinstance(item, ast.Slice):
            parts = [self.eval(p) if p is not None else None
                     for p in (item.start, item.stop, item.step)]
            if NULL in parts:
                return NULL  # type: ignore[return-value]
            start, stop, step = (rules.slice_bound(p, length) for p in parts)
            if step == 0:
                raise self.fail(item.step or item, "a slice step must not be 0")
            # §2.4: omitted bounds run over the whole pack in the step's direction; explicit
            # negative bounds count from the end; out-of-range bounds are clipped (decision).
            return list(range(length))[slice(start, stop, step)]
        index = self.eval(item)
        if index is NULL:
            return NULL  # type: ignore[return-value]
        if isinstance(index, tuple):
            if index and isinstance(index[0], bool):
                if len(index) != length:
                    raise self.fail(item, f"a mask of length {len(index)} for a pack of "
                                          f"length {length}")
                return [i for i, keep in enumerate(index) if keep]
            return [self.position(item, i, length) for i in index]
        return self.position(item, index, length)

    def position(self, node: ast.Node, index: int, length: int) -> int:
        """§2.4: negative indices count from the end; out of range is an error (int(inf) and
        int(-inf) always are)."""
        infinite = isinstance(index, rules.IntInfinity)
        position = index + length if index < 0 and not infinite else index
        if infinite or not 0 <= position < length:
            raise self.fail(node, f"index {index} is out of range for length {length}")
        return position

    def visit_Subscript(self, node: ast.Subscript) -> Value:
        base = self.eval(node.base)
        if base is NULL:
            return NULL
        chosen = self.indices(node, node.items[0], len(base))
        if chosen is NULL:
            return NULL
        if isinstance(chosen, int):
            return base[chosen]
        picked = [base[i] for i in chosen]
        return "".join(picked) if isinstance(base, str) else tuple(picked)

    def visit_Substitute(self, node: ast.Substitute) -> Value:
        base = self.eval(node.target.base)
        value = self.eval(node.value)
        if base is NULL or value is NULL:
            return NULL
        chosen = self.indices(node.target, node.target.items[0], len(base))
        if chosen is NULL:
            return NULL
        result = list(base)
        if isinstance(chosen, int):
            result[chosen] = value
            return tuple(result)
        if len(chosen) != len(value):
            raise self.fail(node, f"{len(chosen)} indices but {len(value)} new values")
        for position, new in zip(chosen, value):
            result[position] = new
        return tuple(result)

    def visit_Member(self, node: ast.Member) -> Value:
        base = self.eval(node.base)
        if base is NULL:
            return NULL
        if node.name == "size":
            return len(base)
        assert isinstance(base, TensorValue)
        return base.shape if node.name == "shape" else len(base.shape)

    # ------------------------------------------------------------------ casts and built-ins

    def eval_cast(self, node: ast.Call, name: str) -> Value:
        target = self.env.dtype_bindings.get(name, name)
        if not node.args:
            return rules.default_value(target)
        value = self.eval(node.args[0])
        return self.elementwise(node, lambda v: self.numeric(node, rules.cast, target, v),
                                value)

    def eval_builtin(self, node: ast.Node, name: str, arg: ast.Expr) -> Value:
        value = self.eval(arg)
        # Decision (docs/semantics.md): built-ins apply element-wise to packs, like operators.
        return self.elementwise(node, lambda v: self.numeric(node, rules.builtin, name, v),
                                value)


def check_length(span: Span, length: int) -> None:
    """A compile-time pack of `length` items may be built (at most MAX_VALUE_PACK_LENGTH)."""
    if length > MAX_VALUE_PACK_LENGTH:
        raise EvalDiagnostic(f"a pack of {length} items exceeds the limit of "
                             f"{MAX_VALUE_PACK_LENGTH}", span)


def first_evaluated(node: ast.Node) -> ast.Node | None:
    """The operand the evaluator's rule for `node` evaluates first (`visitor.first_operand`,
    but a fold with an initial value `x + .. + init` evaluates `x`, never the fold `x + ..`)."""
    if fold_with_initial(node):
        return node.left.operand  # type: ignore[union-attr]
    return first_operand(node)


def fold_pack(op: str, pack: tuple, cumulative: bool, base: str,
              binary: Callable[[str, Value, Value], Value]) -> Value:
    """§2.4 Folding and Cumulative Folding of a non-null pack — THE fold rules, shared by the
    compile-time evaluator and the @lower engines. `base` is the item type (for the empty sum
    and product: 0.0 / 1.0 for reals); `binary(op, a, b)` applies a numeric operator."""
    if cumulative:
        results: list[Value] = []
        for value in pack:
            results.append(value if not results else binary(op, results[-1], value))
        return tuple(results)
    if op in ("+", "*", "&&", "||"):
        identity = {"+": 0, "*": 1, "&&": True, "||": False}[op]
        if base == "real":
            identity = float(identity)
        if pack:  # the identity only for an empty pack: its type may be unknown ('any')
            return _reduce(binary, op, pack[1:], pack[0])
        return identity
    if op in ("<<", ">>"):
        if not pack:
            return NULL  # §2.4: min/max of an empty pack is null
        return _reduce(binary, op, pack[1:], pack[0])
    if op in ("<", "<=", ">", ">=", "=="):
        # pairwise on consecutive items; an empty pack is sorted, and (decision) uniform
        return all(binary(op, a, b) for a, b in zip(pack, pack[1:]))
    if op == "!=":
        return all(not _identical(a, b) for i, a in enumerate(pack) for b in pack[i + 1:])
    if op == ":=":
        # Decision (docs/semantics.md): the uniform value exists iff the pack is non-empty
        # and all its items are equal by value.
        if pack and all(_identical(v, pack[0]) for v in pack):
            return pack[0]
        return NULL
    raise ValueError(f"unknown fold '{op} ..'")


def fold_from(op: str, pack: tuple, initial: Value,
              binary: Callable[[str, Value, Value], Value]) -> Value:
    """§2.4 `x op .. op init` (types.fold_with_initial) of a non-null pack x and one non-null
    initial value — THE rule, shared by the compile-time evaluator and the @lower engines:
    the fold of x starting from init, `((init op x0) op x1) ..` (the left-deep order of
    `fold_pack`, from init); so an empty x gives init, even for `<<` / `>>`, whose plain fold
    of an empty pack is null."""
    return _reduce(binary, op, pack, initial)


def _reduce(binary: Callable[[str, Value, Value], Value], op: str, pack: tuple,
            initial: Value) -> Value:
    result = initial
    for value in pack:
        result = binary(op, result, value)
    return result


def _identical(a: Value, b: Value) -> bool:
    """Equal values of the same type (`is`, `!=` folds, `:=`): 1 and 1.0 are not identical; a
    symbolic extent is identical only to the same expression (`numeric.symbolic.identical`)."""
    return identical(a, b)
