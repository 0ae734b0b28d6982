"""Binding of input shapes (spec §2.6 and §2.6.1): affine deduction and the binding order.

An extent or pack length that is an *affine* expression `a * x + b` of a not-yet-bound symbol `x`
(with `a`, `b` constant literals) declares `x`, whose value is deduced from the actual shape;
any other expression is evaluated and checked. The *binding order* of the inputs is computed
once per definition, from the definition alone (§2.6.1), so that every invocation binds the
same way; a definition whose inputs cannot be ordered is invalid.

Instantiation (`refinterp.language.instance`) binds each invocation's input shapes in
`definition_order`, deducing symbols with `affine_form` / `solve_affine`.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from refinterp.core.cache import IdentityCache
from refinterp.core.diagnostics import BindingDiagnostic
from refinterp.syntax import ast
from refinterp.syntax.visitor import ExprVisitor, children, nodes


@dataclass(frozen=True)
class Affine:
    """`coefficient * symbol + offset`, with rational constants (from literals only)."""

    symbol: str
    coefficient: Fraction
    offset: Fraction


def affine_form(expr: ast.Expr) -> Affine | None:
    """The affine form of `expr` in a single symbol, or None (§2.6: "an expression in the form
    a * x + b (or an equivalent one), where a and b must be constant expressions composed of
    constant literals")."""
    form = _Linear().visit_chain(expr)
    if form is None:
        return None
    symbol, coefficient, offset = form
    if symbol is None or coefficient == 0:
        return None
    return Affine(symbol, coefficient, offset)


_LinearForm = tuple[str | None, Fraction, Fraction]


class _Linear(ExprVisitor[_LinearForm | None]):
    """(symbol, a, b) with expr == a * symbol + b, symbol None for a constant; None if not.
    One instance per expression (`visit_chain` keeps results of a long chain for it)."""

    def visit_IntLiteral(self, expr: ast.IntLiteral) -> _LinearForm:
        return None, Fraction(0), Fraction(expr.value)

    def visit_Name(self, expr: ast.Name) -> _LinearForm:
        return expr.name, Fraction(1), Fraction(0)

    def visit_Unary(self, expr: ast.Unary) -> _LinearForm | None:
        if expr.op not in ("+", "-"):
            return None
        inner = self.visit_chain(expr.operand)
        if inner is None:
            return None
        sign = -1 if expr.op == "-" else 1
        return inner[0], sign * inner[1], sign * inner[2]

    def visit_Binary(self, expr: ast.Binary) -> _LinearForm | None:
        if expr.op not in ("+", "-", "*"):
            return None
        left, right = self.visit_chain(expr.left), self.visit_chain(expr.right)
        if left is None or right is None:
            return None
        if expr.op == "*":
            if left[0] is not None and right[0] is not None:
                return None  # x * y is not affine
            scale, (symbol, a, b) = (left[2], right) if left[0] is None else (right[2], left)
            return symbol, scale * a, scale * b
        sign = -1 if expr.op == "-" else 1
        symbols = {s for s in (left[0], right[0]) if s is not None}
        if len(symbols) > 1:
            return None
        symbol = symbols.pop() if symbols else None
        a = (left[1] if left[0] else 0) + sign * (right[1] if right[0] else 0)
        return symbol, Fraction(a), left[2] + sign * right[2]

    def generic_visit(self, expr: ast.Expr) -> None:
        return None  # any other form is not affine



def solve_affine(form: Affine, value: int) -> int | None:
    """The integer `x` with `a * x + b == value`, or None if there is none (e.g. an odd rank
    for `s..(2 * d)`)."""
    x = (Fraction(value) - form.offset) / form.coefficient
    return int(x) if x.denominator == 1 else None


def free_names(expr: object) -> set[str]:
    """The identifiers an expression refers to: its `Name` nodes, so not operator names,
    members, labels or declared target names (plain strings in the tree); also of any node (a
    right-hand side, a target) or tuple of nodes, and none of None."""
    return set().union(*(_names_under(root) for root in nodes(expr)))


# The free names of recently seen nodes. Passes ask at every node of a formula (the engines'
# compile-time tests), which without them would walk a long chain once per node.
_NAMES: IdentityCache[frozenset[str]] = IdentityCache(1 << 14)


def _names_under(root: ast.Node) -> frozenset[str]:
    """The free names of `root`, found bottom-up (no recursion) and kept for every node under
    it whose names were not known yet."""
    known: dict[int, frozenset[str]] = {}
    pending: list[ast.Node] = []  # parents before their children
    stack = [root]
    while stack:
        node = stack.pop()
        cached = _NAMES.get(node)
        if cached is not None:
            known[id(node)] = cached
        else:
            pending.append(node)
            stack.extend(children(node))
    for node in reversed(pending):
        names = frozenset().union(*(known[id(child)] for child in children(node)))
        if isinstance(node, ast.Name):
            names |= {node.name}
        known[id(node)] = names
        _NAMES.put(node, names)
    return known[id(root)]


def _is_constant(expr: ast.Expr) -> bool:
    return not free_names(expr)


def initially_known(attributes: tuple[ast.ParamDecl, ...]) -> set[str]:
    """§2.6.1: the non-packed, non-optional, non-deferred attributes are known from the start."""
    return {a.name for a in attributes
            if a.type.pack is None and not a.type.optional
            and (a.default is None or _is_constant(a.default))}


def _symbols_of(decl: ast.ParamDecl) -> set[str]:
    """Every symbol a shape can declare: extents, pack lengths, the rank capture."""
    declared: set[str] = set()
    spec = decl.type
    if spec.rank is not None:
        declared.add(spec.rank)
    for extent in spec.shape or ():
        for expr in (extent.value, extent.pack.length if extent.pack else None):
            form = affine_form(expr) if expr is not None else None
            if form is not None:
                declared.add(form.symbol)
    if spec.pack is not None and spec.pack.length is not None:
        form = affine_form(spec.pack.length)
        if form is not None:
            declared.add(form.symbol)
    return declared


def _flexible_items(decl: ast.ParamDecl, known: set[str]) -> list[ast.Extent]:
    """Packed shape items whose length is not yet determined (§2.6.1)."""
    own = {decl.type.rank} if decl.type.rank else set()
    flexible = []
    for extent in decl.type.shape or ():
        if extent.pack is None:
            continue
        length = extent.pack.length
        if length is None:
            # `s..`: its length is whatever remains, unless s itself is already bound.
            if not (isinstance(extent.value, ast.Name) and extent.value.name in known):
                flexible.append(extent)
            continue
        unknown = free_names(length) - known - own
        if unknown:
            flexible.append(extent)
    return flexible


def binding_order(attributes: tuple[ast.ParamDecl, ...],
                  inputs: tuple[ast.ParamDecl, ...]) -> list[ast.ParamDecl]:
    """The order in which inputs are bound (§2.6.1), or a BindingDiagnostic naming the input
    whose shape stays ambiguous.

    Passes over the non-optional inputs in declaration order take each input whose shape has at
    most one packed item of undetermined length (symbols it binds count for the inputs after
    it); passes repeat while they make progress. Optional inputs come last, the same way.
    """
    known = initially_known(attributes)
    order: list[ast.ParamDecl] = []
    for group in ([i for i in inputs if not i.type.optional],
                  [i for i in inputs if i.type.optional]):
        pending = list(group)
        progress = True
        while pending and progress:
            progress = False
            for decl in list(pending):
                if len(_flexible_items(decl, known)) <= 1:
                    order.append(decl)
                    known |= _symbols_of(decl)
                    pending.remove(decl)
                    progress = True
        if pending:
            stuck = pending[0]
            names = ", ".join(sorted({e.value.name for e in _flexible_items(stuck, known)
                                      if isinstance(e.value, ast.Name)}))
            raise BindingDiagnostic(
                f"the shape of input '{stuck.name}' cannot be bound unambiguously: more than one "
                f"packed extent ({names}) has an unknown length", stuck.span,
                ["give all but one of their lengths by an attribute or by another input "
                 "(spec §2.6.1)"])
    return order


def check_deferred_attributes(attributes: tuple[ast.ParamDecl, ...],
                              inputs: tuple[ast.ParamDecl, ...]) -> None:
    """§2.6.1: a deferred default (non-constant) must be computable from the attributes and the
    symbols the inputs bind; otherwise the definition is invalid."""
    known = {a.name for a in attributes}
    for decl in inputs:
        known |= _symbols_of(decl)
        for extent in decl.type.shape or ():
            known |= free_names(extent.value) if isinstance(extent.value, ast.Name) else set()
    for attribute in attributes:
        if attribute.default is None or _is_constant(attribute.default):
            continue
        missing = sorted(free_names(attribute.default) - known)
        if missing:
            raise BindingDiagnostic(
                f"the default of attribute '{attribute.name}' uses {', '.join(missing)}, which "
                f"no attribute or input shape defines", attribute.default.span)


# Binding orders by definition (its syntax tree): see `definition_order`.
_ORDERS: IdentityCache[tuple[int, ...]] = IdentityCache(1024)


def definition_order(definition: ast.OperatorDef) -> list[ast.ParamDecl]:
    """The checked binding order of a definition's inputs (§2.6.1: it depends on the definition
    only), computed once per definition tree (parsed files are shared, so the standard
    library's once per process) and reused by every instantiation, as positions in @input.
    A diagnostic is not cached."""
    attributes = definition.block("attrib")
    inputs = definition.block("input")
    attribute_decls = attributes.entries if attributes else ()
    input_decls = inputs.entries if inputs else ()
    positions = _ORDERS.get(definition)
    if positions is None:
        order = binding_order(attribute_decls, input_decls)  # type: ignore[arg-type]
        check_deferred_attributes(attribute_decls, input_decls)  # type: ignore[arg-type]
        positions = tuple(next(i for i, decl in enumerate(input_decls) if decl is chosen)
                          for chosen in order)
        _ORDERS.put(definition, positions)
    return [input_decls[i] for i in positions]  # type: ignore[misc]
