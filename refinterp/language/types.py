"""The type model of compile-time expressions and the static checks run before evaluation (§2.3).

A `Type` is a primitive base (`int real bool str`, a generic name declared in @dtype, or `any`
for the unknown item type of `[]`) with three modifiers: packed, optional, tensor. `check_expr`
infers the type of every node of an expression, raising a TypeDiagnostic with the node's span at
the first error (`1 + true`, `[1, 2.0]`, `x && ..` on ints, `[a..(0.5)]`, ...). The evaluator
(`refinterp.language.expr`) reads the inferred types, e.g. to give `[] + ..` of a real pack the
value 0.0.
"""

from __future__ import annotations

from collections import ChainMap
from dataclasses import dataclass, field, replace
from typing import Mapping

from refinterp.core.diagnostics import TypeDiagnostic
from refinterp.core.source import Span
from refinterp.numeric.symbolic import SymInt
from refinterp.numeric.rules import (ARITHMETIC_OPS, BUILTINS, LOGICAL_OPS, MIN_MAX_OPS,
                                     NUM_BUILTINS)
from refinterp.syntax import ast
from refinterp.syntax.visitor import ExprVisitor

CONCRETE = ("int", "real", "bool", "str")
ABSTRACT = ("type", "arith", "num")
CASTS = ("int", "real", "bool", "str")
# the operators and built-ins are numeric.rules' (one vocabulary); these take numeric operands
NUMERIC_OPS = ARITHMETIC_OPS + MIN_MAX_OPS
ORDER_FOLDS = ("<", "<=", ">", ">=")
FOLDS_WITH_INITIAL = ("+", "*", "&&", "||", "<<", ">>")


def fold_with_initial(node: ast.Expr) -> bool:
    """`x op .. op init` (§2.4 Folding: "a fold expression naturally combines with the same
    binary operator to result in an expression that has an initial value to the fold"): a
    binary `op` whose left operand is a (not cumulative) fold with the same `op`, one of
    FOLDS_WITH_INITIAL. Its value is `expr.fold_from`: the fold of x starting from init."""
    return isinstance(node, ast.Binary) and isinstance(node.left, ast.Fold) and \
        node.left.op == node.op and not node.left.cumulative and node.op in FOLDS_WITH_INITIAL


@dataclass(frozen=True)
class Type:
    """The type of a compile-time expression or a declaration.

    `length` (a pack's length) and `shape` (a tensor's extents) are kept symbolically, as the
    declaration wrote them; they do not take part in type equality.
    """

    base: str
    packed: bool = False
    optional: bool = False
    tensor: bool = False
    length: ast.Expr | None = field(default=None, compare=False)
    shape: tuple[ast.Extent, ...] | None = field(default=None, compare=False)

    def __str__(self) -> str:
        text = ("optional " if self.optional else "") + self.base
        if self.tensor:
            text += "[..]"
        return text + (".." if self.packed else "")

    def item(self) -> "Type":
        return replace(self, packed=False)


INT, REAL, BOOL, STR = Type("int"), Type("real"), Type("bool"), Type("str")


@dataclass
class TypeScope:
    """What an expression may refer to: symbol types and generic type names with their bound."""

    symbols: Mapping[str, Type] = field(default_factory=dict)
    dtypes: dict[str, str] = field(default_factory=dict)


def check_expr(expr: ast.Expr, scope: TypeScope) -> dict[int, Type]:
    """Check `expr`; return the type of every node, keyed by `id(node)`. Flat chains of any
    length are checked without recursion along them; an expression nested too deeply
    otherwise (the parser allows hundreds of levels of parentheses or selects) is a
    diagnostic at its start."""
    checker = Checker(scope)
    try:
        checker.check(expr)
    except RecursionError:
        raise TypeDiagnostic("nesting too deep to check", head(expr.span)) from None
    return checker.types


def head(span: Span) -> Span:
    """The first character of a span: where a diagnostic about a whole expression points."""
    return Span(span.source, span.line, span.col, span.line, span.col + 1)


class Checker(ExprVisitor[Type]):
    """Infers types bottom-up, one `visit_<Class>` rule per expression class; one instance per
    checked expression. `check` records each node's type in `types`, keyed by `id(node)`: two
    equal subtrees can have different types (`x` under `?x ? x : ...` is not optional). Every
    node keyed belongs to the checked tree, which the caller holds while it uses `types`."""

    complete = True

    def __init__(self, scope: TypeScope) -> None:
        self.scope = scope
        self.types: dict[int, Type] = {}

    # ------------------------------------------------------------------ helpers

    def fail(self, node: ast.Node, message: str) -> TypeDiagnostic:
        return TypeDiagnostic(message, node.span)

    def is_numeric(self, base: str) -> bool:
        return base in ("int", "real", "any") or self.scope.dtypes.get(base) == "num"

    def unify(self, node: ast.Node, what: str, *types: Type) -> str:
        """The common base of `types` (`any` matches everything), else a diagnostic."""
        bases = {t.base for t in types} - {"any"}
        if len(bases) > 1:
            shown = " and ".join(sorted(bases))
            raise self.fail(node, f"{what} needs operands of one type; got {shown}")
        return bases.pop() if bases else "any"

    def check(self, node: ast.Expr, scope: TypeScope | None = None) -> Type:
        """The type of `node` (in `scope`, default the current one), recorded in `types`. A
        long left-deep chain (`1 + 1 + ... + 1`) is checked from its deepest node up, each
        rule finding its first operand's type ready: every rule checks that operand first."""
        saved = self.scope
        if scope is not None:
            self.scope = scope
        try:
            result = self.visit_chain(node)
        finally:
            self.scope = saved
        self.types[id(node)] = result
        return result

    # ------------------------------------------------------------------ rules

    def visit_IntLiteral(self, node: ast.IntLiteral) -> Type:
        return INT

    def visit_RealLiteral(self, node: ast.RealLiteral) -> Type:
        return REAL

    visit_Constant = visit_RealLiteral

    def visit_BoolLiteral(self, node: ast.BoolLiteral) -> Type:
        return BOOL

    def visit_StringLiteral(self, node: ast.StringLiteral) -> Type:
        parts = [self.check(p) for p in node.parts if not isinstance(p, str)]
        return replace(STR, optional=any(t.optional for t in parts))

    def visit_Name(self, node: ast.Name) -> Type:
        found = self.scope.symbols.get(node.name)
        if found is None:
            raise TypeDiagnostic(f"undefined name '{node.name}'", node.span, code="E0401")
        return found

    def visit_Builtin(self, node: ast.Builtin) -> Type:
        return self.check_builtin(node, node.name, node.args)

    def visit_Expand(self, node: ast.Expand) -> Type:
        raise self.fail(node, "an expansion '..' is only allowed as a list item or index")

    def visit_Zip(self, node: ast.Zip) -> Type:
        raise self.fail(node, "a zip '(a, b)..' is only allowed inside a list")

    def visit_Bounded(self, node: ast.Bounded) -> Type:
        raise self.fail(node, "a bounded index '|i|' is only allowed in a tensor access of a "
                              "@lower formula")

    def visit_Placeholder(self, node: ast.Placeholder) -> Type:
        raise self.fail(node, "'~' is not a value")

    def unexpected(self, node: ast.Node) -> Type:
        """A range or slice outside a list or index (or a node that is no expression)."""
        raise self.fail(node, f"unexpected {type(node).__name__} in an expression")

    visit_Range = visit_Slice = generic_visit = unexpected

    def visit_ListExpr(self, node: ast.ListExpr) -> Type:
        item_types: list[Type] = []
        optional = False
        for item in node.items:
            if isinstance(item, ast.Range):
                for part in (item.start, item.stop, item.step):
                    if part is not None:
                        t = self.check(part)
                        self.require(part, t, "int", "a range bound", packed=False)
                        optional |= t.optional
                item_types.append(INT)
                continue
            if isinstance(item, ast.Expand):
                t = self.check_expand(item)
            else:
                t = self.check(item)
                if t.packed:
                    raise self.fail(item, "a pack inside a list must be expanded: write 'x..'")
            optional |= t.optional
            item_types.append(t)
        base = self.unify(node, "a list", *item_types) if item_types else "any"
        return Type(base, packed=True, optional=optional)

    def check_expand(self, item: ast.Expand) -> Type:
        if isinstance(item.operand, ast.Zip):
            parts = [self.check(p) for p in item.operand.items]
            for part, t in zip(item.operand.items, parts):
                if not t.packed:
                    raise self.fail(part, "each item of a zip '(a, b)..' must be a pack")
            base = self.unify(item.operand, "a zip", *parts)
            self.types[id(item.operand)] = Type(base, packed=True)
            return Type(base, optional=any(t.optional for t in parts))
        t = self.check(item.operand)
        if item.count is None:
            if not t.packed:
                raise self.fail(item, "only a pack can be expanded with '..'; repeat a single "
                                      "item with '..(n)'")
        else:
            count = self.check(item.count)
            if count.packed or count.base not in ("int", "bool", "any"):
                raise self.fail(item.count, f"a repetition count must be an int or a bool; "
                                            f"got {count}")
            t = replace(t, optional=t.optional or count.optional)
        return t.item()

    def require(self, node: ast.Node, t: Type, base: str, what: str,
                packed: bool | None = None) -> None:
        if t.base not in (base, "any"):
            raise self.fail(node, f"{what} must be {base}; got {t}")
        if packed is not None and t.packed != packed:
            raise self.fail(node, f"{what} must {'' if packed else 'not '}be a pack; got {t}")

    def visit_Unary(self, node: ast.Unary) -> Type:
        t = self.check(node.operand)
        if node.op == "?":
            return BOOL
        if node.op == "!":
            self.require(node.operand, t, "bool", "the operand of '!'")
        elif not self.is_numeric(t.base):
            raise self.fail(node, f"unary '{node.op}' needs an int or real operand; got {t}")
        return t

    def visit_Binary(self, node: ast.Binary) -> Type:
        op = node.op
        if op == "??":
            return self.check_coalesce(node)
        left, right = self.check(node.left), self.check(node.right)
        packed = left.packed or right.packed
        optional = left.optional or right.optional
        if op == "in":
            if not right.packed:
                raise self.fail(node.right, f"the right operand of 'in' must be a pack; "
                                            f"got {right}")
            self.unify(node, "'in'", left, right)
            return Type("bool", packed=left.packed, optional=optional)
        if op in LOGICAL_OPS:
            if {left.base, right.base} - {"bool", "any"}:
                raise self.fail(node, f"'{op}' needs bool operands; got {left} and {right}")
            return Type("bool", packed, optional)
        base = self.unify(node, f"'{op}'", left, right)
        if op in NUMERIC_OPS:
            if not self.is_numeric(base):
                raise self.fail(node, f"'{op}' needs int or real operands; got {left} and "
                                      f"{right}")
            if fold_with_initial(node):
                # A fold with an initial value (§2.4): never null for an empty pack.
                operand = self.types[id(node.left.operand)]
                optional = operand.optional or right.optional
            return Type(base, packed, optional)
        # comparisons and `is`: any type, the same on both sides
        return Type("bool", packed, optional)

    def check_coalesce(self, node: ast.Binary) -> Type:
        """`a ?? b ?? c` groups to the right, `a ?? (b ?? c)`: its left operands are checked
        in order, then the last right operand, then each link's rule from the innermost out
        (the order of plain recursion, without recursion along the chain)."""
        links = [node]
        while isinstance(links[-1].right, ast.Binary) and links[-1].right.op == "??":
            links.append(links[-1].right)
        lefts = [self.check(link.left) for link in links]
        result = self.check(links[-1].right)
        for link, left in zip(reversed(links), reversed(lefts)):
            result = self.coalesce_rule(link, left, result)
            self.types[id(link)] = result
        return result

    def coalesce_rule(self, node: ast.Binary, left: Type, right: Type) -> Type:
        if not left.optional:
            raise self.fail(node.left, f"the left operand of '??' must be optional; got {left}")
        if right.optional:
            raise self.fail(node.right, f"the right operand of '??' must not be optional; "
                                        f"got {right}")
        if left.packed != right.packed:
            raise self.fail(node, f"'??' needs both operands packed or both single; got "
                                  f"{left} and {right}")
        return Type(self.unify(node, "'??'", left, right), left.packed)

    def visit_Select(self, node: ast.Select) -> Type:
        """`c0 ? a0 : c1 ? a1 : ... : z` (an else-chain): each link's condition and taken
        branch in order, then `z`, then each link's rule from the innermost out (the order of
        plain recursion, without recursion along the chain)."""
        links = [node]
        while isinstance(links[-1].otherwise, ast.Select):
            links.append(links[-1].otherwise)
        parts = []
        for link in links:
            cond = self.check(link.cond)
            self.require(link.cond, cond, "bool", "a select condition")
            parts.append((cond, self.check(link.then, self.promoted_scope(link.cond))))
        last = links[-1].otherwise
        result = self.check(last) if last is not None else None
        for link, (cond, then) in zip(reversed(links), reversed(parts)):
            result = self.select_rule(link, cond, then, result)
            self.types[id(link)] = result
        return result

    def select_rule(self, node: ast.Select, cond: Type, then: Type,
                    otherwise: Type | None) -> Type:
        """§2.4 Select operator: "One or more arguments may also be packs, in which case the
        result is a pack." So the result is a pack when the condition or either branch is one;
        under a single condition a single branch beside a pack branch is repeated to the pack
        branch's length when taken (`expr.Evaluator.visit_Select`, docs/semantics.md "Select")."""
        branches = [then] if otherwise is None else [then, otherwise]
        base = self.unify(node, "a select", *branches)
        packed = cond.packed or any(b.packed for b in branches)
        optional = cond.optional or node.otherwise is None or any(b.optional for b in branches)
        return Type(base, packed, optional)

    def promoted_scope(self, cond: ast.Expr) -> TypeScope | None:
        """§2.4: under `?x ? x : ...` and `?x && c ? x : ...`, `x` is not optional."""
        tested = self.null_tested_names(cond)
        if not tested:
            return None
        outer = self.scope.symbols
        promoted = {name: replace(outer[name], optional=False)
                    for name in tested if name in outer}
        return TypeScope(ChainMap(promoted, outer), self.scope.dtypes)

    @staticmethod
    def null_tested_names(cond: ast.Expr) -> list[str]:
        """Names `x` tested by `?x`, alone or as terms of a conjunction (of any length), left
        to right."""
        names = []
        terms = [cond]
        while terms:
            term = terms.pop()
            if isinstance(term, ast.Unary) and term.op == "?" and \
                    isinstance(term.operand, ast.Name):
                names.append(term.operand.name)
            elif isinstance(term, ast.Binary) and term.op == "&&":
                terms += [term.right, term.left]
        return names

    def visit_Fold(self, node: ast.Fold) -> Type:
        t = self.check(node.operand)
        if not t.packed:
            raise self.fail(node.operand, f"a fold needs a pack; got {t}")
        op = node.op
        if op in ("+", "*", "<<", ">>") + ORDER_FOLDS and not self.is_numeric(t.base):
            raise self.fail(node, f"the fold '{op} ..' needs an int or real pack; got {t}")
        if op in ("&&", "||") and t.base not in ("bool", "any"):
            raise self.fail(node, f"the fold '{op} ..' needs a bool pack; got {t}")
        if node.cumulative:
            return t
        if op in ORDER_FOLDS or op in ("==", "!="):
            return Type("bool", optional=t.optional)
        if op in (":=", "<<", ">>"):
            return Type(t.base, optional=True)
        return t.item()

    def visit_Subscript(self, node: ast.Subscript) -> Type:
        base = self.check(node.base)
        if base.tensor:
            raise self.fail(node, "tensor access is only allowed in @lower formulas")
        if node.trailing_comma or len(node.items) != 1:
            raise self.fail(node, "indexing a pack or string takes exactly one index")
        if not base.packed and base.base != "str":
            raise self.fail(node.base, f"only packs and strings can be indexed; got {base}")
        index, single = self.check_index(node.items[0])
        optional = base.optional or index.optional
        if base.base == "str" and not base.packed:
            return Type("str", optional=optional)
        return Type(base.base, packed=not single, optional=optional)

    def check_index(self, item: ast.IndexItem) -> tuple[Type, bool]:
        """The index's type and whether it selects a single item."""
        if isinstance(item, ast.Slice):
            optional = False
            for part in (item.start, item.stop, item.step):
                if part is not None:
                    t = self.check(part)
                    self.require(part, t, "int", "a slice bound", packed=False)
                    optional |= t.optional
            return Type("int", packed=True, optional=optional), False
        t = self.check(item)
        if t.base not in ("int", "bool", "any") or (t.base == "bool" and not t.packed):
            raise self.fail(item, f"an index must be an int, an int pack or a bool mask; "
                                  f"got {t}")
        return t, not t.packed

    def visit_Substitute(self, node: ast.Substitute) -> Type:
        target = self.check(node.target.base)
        if not target.packed:
            raise self.fail(node.target.base, f"substitution needs a pack; got {target}")
        if len(node.target.items) != 1 or node.target.trailing_comma:
            raise self.fail(node.target, "substitution takes exactly one index")
        index, single = self.check_index(node.target.items[0])
        value = self.check(node.value)
        base = self.unify(node, "a substitution", target, value)
        if single and value.packed:
            raise self.fail(node.value, "a single index is replaced by a single value")
        if not single and not value.packed:
            raise self.fail(node.value, "a pack of indices is replaced by a pack of values")
        result = Type(base, True, target.optional or index.optional or value.optional)
        self.types[id(node.target)] = result
        return result

    def visit_Member(self, node: ast.Member) -> Type:
        base = self.check(node.base)
        if node.name in ("shape", "rank"):
            if not base.tensor or base.packed:
                raise self.fail(node, f"'.{node.name}' is defined for a (non-packed) tensor; "
                                      f"got {base}")
            return Type("int", packed=node.name == "shape", optional=base.optional)
        if node.name == "size":
            if not base.packed:
                raise self.fail(node, f"'.size' is defined for a pack; got {base}")
            return Type("int", optional=base.optional)
        raise self.fail(node, f"unknown member '.{node.name}' (expected shape, rank or size)")

    def visit_Call(self, node: ast.Call) -> Type:
        if node.label or node.generics or node.attributes is not None or len(node.callee) != 1:
            raise self.fail(node, f"operator invocation '{'.'.join(node.callee)}' is not "
                                  f"allowed in a compile-time expression")
        name = node.callee[0]
        if name in CASTS or name in self.scope.dtypes:
            return self.check_cast(node, name)
        if name in BUILTINS:
            return self.check_builtin(node, name, node.args)
        raise self.fail(node, f"'{name}' is neither a type (cast) nor a built-in function")

    def check_cast(self, node: ast.Call, name: str) -> Type:
        if not node.args:
            return Type(name)
        if len(node.args) != 1:
            raise self.fail(node, f"a cast takes one argument; got {len(node.args)}")
        t = self.check(node.args[0])
        if name == "str" or t.base == "str":
            raise self.fail(node, "strings cannot be cast; use string formatting '{x}'")
        if self.scope.dtypes.get(name) == "type":
            raise self.fail(node, f"cannot cast to '{name}': its bound 'type' allows str")
        return Type(name, t.packed, t.optional)

    def check_builtin(self, node: ast.Expr, name: str, args: tuple[ast.Expr, ...]) -> Type:
        if name not in BUILTINS:
            raise self.fail(node, f"unknown built-in function '{name}'")
        if len(args) != 1:
            raise self.fail(node, f"'{name}' takes one argument; got {len(args)}")
        t = self.check(args[0])
        allowed = ("int", "real") if name in NUM_BUILTINS else ("real",)
        if t.base not in allowed + ("any",) and not (
                name in NUM_BUILTINS and self.scope.dtypes.get(t.base) == "num"):
            raise self.fail(node, f"'{name}' needs a {' or '.join(allowed)} argument; got {t}")
        return t


def type_from_spec(spec: ast.TypeSpec, dtypes: dict[str, str]) -> Type:
    """The type a declaration's type specifier denotes (§2.3); `dtypes` are the @dtype names.

    The abstract types `type`, `arith` and `num` only restrict generics in @dtype (§2.13).
    """
    if spec.name in ABSTRACT:
        raise TypeDiagnostic(f"the abstract type '{spec.name}' can only bound a generic type in "
                             f"@dtype; declare 'T: {spec.name};' and use T", spec.span)
    if spec.name not in CONCRETE and spec.name not in dtypes:
        raise TypeDiagnostic(f"unknown type '{spec.name}'", spec.span,
                             ["types are int, real, bool, str and the names declared in @dtype"])
    return Type(spec.name, packed=spec.pack is not None, optional=spec.optional,
                tensor=spec.shape is not None or spec.rank is not None,
                length=spec.pack.length if spec.pack else None, shape=spec.shape)


def dtype_scope(decls: tuple[ast.DtypeDecl, ...]) -> dict[str, str]:
    """Generic names and their bounds from a @dtype block, checked (§2.13)."""
    dtypes: dict[str, str] = {}
    for decl in decls:
        if decl.base not in ABSTRACT:
            raise TypeDiagnostic(f"a generic type is bounded by type, arith or num; got "
                                 f"'{decl.base}'", decl.span)
        if decl.default is not None and decl.default not in _ALLOWED[decl.base]:
            raise TypeDiagnostic(f"the default '{decl.default}' is not a {decl.base} type",
                                 decl.span)
        if decl.name in dtypes or decl.name in CONCRETE + ABSTRACT:
            raise TypeDiagnostic(f"'{decl.name}' is already a type name", decl.span)
        dtypes[decl.name] = decl.base
    return dtypes


_ALLOWED = {"type": CONCRETE, "arith": ("int", "real", "bool"), "num": ("int", "real")}


def type_of_value(value: object) -> Type:
    """The type of a runtime value (used for attribute values given on the command line)."""
    from refinterp.language.values import NULL, TensorValue

    if value is NULL:
        return Type("any", optional=True)
    if isinstance(value, bool):
        return BOOL
    if isinstance(value, (int, SymInt)):
        return INT
    if isinstance(value, float):
        return REAL
    if isinstance(value, str):
        return STR
    if isinstance(value, TensorValue):
        return Type(value.dtype, tensor=True)
    if isinstance(value, tuple):
        plain = set(map(type, value))  # a long pack of plain values: one look per type
        if len(plain) == 1 and plain <= {bool, int, float, str}:
            return Type(type_of_value(value[0]).base, packed=True)
        items = {type_of_value(v) for v in value}
        if len(items) > 1:
            raise ValueError("a pack mixes types")
        base = items.pop().base if items else "any"
        return Type(base, packed=True)
    if getattr(value, "sign", None) is not None:  # rules.IntInfinity
        return INT
    raise ValueError(f"no SkriptND type for {value!r}")
