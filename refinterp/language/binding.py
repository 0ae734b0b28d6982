"""Binding of input shapes (spec §2.6 and §2.6.1): affine deduction and the binding order.

An extent or pack length that is an *affine* expression `a * x + b` of a not-yet-bound symbol `x`
(with `a`, `b` constant literals) declares `x`, whose value is deduced from the actual shape;
any other expression is evaluated and checked. The *binding order* of the inputs is computed
once per definition, from the definition alone (§2.6.1), so that every invocation binds the
same way; a definition whose inputs cannot be ordered is invalid. A pack length whose names are
known is determined, an int (a rank) or a bool (the item present or absent, §2.6) alike; which
@using symbols input shapes may use depends on the profile (`early_usings`).

Instantiation (`refinterp.language.instance`) binds each invocation's input shapes in
`definition_order`, deducing symbols with `affine_form` / `solve_affine`.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from fractions import Fraction

from refinterp.core.cache import IdentityCache
from refinterp.core.diagnostics import BindingDiagnostic
from refinterp.language.invocation import span_text
from refinterp.language.types import CASTS
from refinterp.numeric import rules
from refinterp.syntax import ast
from refinterp.syntax.visitor import ExprVisitor, children, nodes, walk


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
    known: dict[int, frozenset[str]] = {}  # by id(): every node keyed lies under `root`, held
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
    """§2.6.1 step 1: a default is constant when it reads no name and casts to no generic
    type: `T(2)` waits for T, which an input may bind (docs/semantics.md "Generic-cast
    defaults"), so no input shape may use it."""
    return not free_names(expr) and not any(
        isinstance(node, ast.Call) and len(node.callee) == 1 and node.callee[0] not in CASTS
        for node in walk(expr))


def initially_known(attributes: tuple[ast.ParamDecl, ...]) -> set[str]:
    """§2.6.1: the non-packed, non-optional, non-deferred attributes are known from the start."""
    return {a.name for a in attributes
            if a.type.pack is None and not a.type.optional
            and (a.default is None or _is_constant(a.default))}


def _bound_before_inputs(attributes: tuple[ast.ParamDecl, ...]) -> set[str]:
    """The attributes that have their value when the inputs are bound (§2.6.1 step 1: given,
    constant defaults, null for optional ones); only deferred ones wait (step 3)."""
    return {a.name for a in attributes if a.default is None or _is_constant(a.default)}


def using_targets(target: ast.LValue) -> set[str]:
    """The names a @using target binds: `a`, `[a, b..]`, `[(e, f)..]` (§2.9)."""
    if isinstance(target, ast.LName):
        return {target.name}
    if isinstance(target, (ast.LList, ast.LZip)):
        return set().union(*(using_targets(item) for item in target.items))
    return set()


def early_usings(attributes: tuple[ast.ParamDecl, ...], usings: tuple[ast.UsingDecl, ...],
                 profile: rules.Profile = rules.SPEC) -> tuple[ast.UsingDecl, ...]:
    """The @using entries known before the inputs are bound. §2.9: "Symbols declared in the
    @using block are not visible in the @attrib and @input blocks", so none under the `spec`
    profile. Under a profile whose `using_in_inputs` is "attributes" (`khronos`: its stdlib
    declares `input: T[b, c..(ncx), s..(d), c..(!ncx)]` with `ncx = data_format == 'NCX'` in
    @using), the entries, in declaration order, whose expressions use only the initially known
    attributes (§2.6.1) and earlier such entries: they are "known identifiers" for input
    shapes (§2.6), and are evaluated (with the assertions they allow, §2.9) before the inputs."""
    if profile.using_in_inputs != "attributes":
        return ()
    known = initially_known(attributes)
    early = []
    for using in usings:
        if free_names(using.value) <= known and free_names(using.target) <= known:
            early.append(using)
            known |= using_targets(using.target)
    return tuple(early)


@dataclass(frozen=True)
class _BindingState:
    """What the binding order knows at one point (§2.6.1): `known` names may give a pack
    length that disambiguates a shape (initially known attributes, early @using symbols,
    symbols of inputs bound before); `available` names have a value when the input is bound
    (also optional attributes); `reserved` names are never declared by a shape (attributes and
    @using symbols: "an identifier that has not been used before" declares, §2.6); `usings`
    are the @using symbols not known before the inputs, for the note on their visibility."""

    known: frozenset[str]
    available: frozenset[str]
    reserved: frozenset[str]
    usings: frozenset[str]

    def declaring(self, expr: ast.Expr, own: set[str]) -> bool:
        """Whether `expr` is an affine form of a symbol it declares (§2.6)."""
        form = affine_form(expr)
        return form is not None and form.symbol not in self.available | self.reserved | own

    def after(self, decl: ast.ParamDecl) -> "_BindingState":
        """The state once `decl` is bound: the symbols its shape declares are known."""
        declared = _symbols_of(decl) - self.reserved - self.available
        return replace(self, known=self.known | declared, available=self.available | declared)


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


def _open_items(decl: ast.ParamDecl,
                state: _BindingState) -> tuple[list[ast.Extent], list[ast.Extent]]:
    """The packed shape items of `decl` whose length is not determined yet (§2.6.1), split into
    *flexible* ones (`s..`, a length declaring a new symbol, or one known only at invocation,
    such as an optional attribute: "optional attributes cannot be used for disambiguation")
    and *waiting* ones (a length using symbols that no binding has yet: the input waits for
    other inputs to bind them). A length whose names are all known is determined, whether it
    is an int (the item's rank) or a bool (the item present or not, §2.6); its type is checked
    when it is evaluated."""
    own = {decl.type.rank} if decl.type.rank else set()
    flexible, waiting = [], []
    for extent in decl.type.shape or ():
        if extent.pack is None:
            continue
        length = extent.pack.length
        if length is None:
            # `s..`: its length is whatever remains, unless s itself is already bound.
            if not (isinstance(extent.value, ast.Name) and extent.value.name in state.known):
                flexible.append(extent)
            continue
        names = free_names(length) - own
        if names <= state.known:
            continue
        if names <= state.available or state.declaring(length, own):
            flexible.append(extent)
        else:
            waiting.append(extent)
    return flexible, waiting


def binding_order(attributes: tuple[ast.ParamDecl, ...], inputs: tuple[ast.ParamDecl, ...],
                  usings: tuple[ast.UsingDecl, ...] = (),
                  profile: rules.Profile = rules.SPEC) -> list[ast.ParamDecl]:
    """The order in which inputs are bound (§2.6.1), or a BindingDiagnostic naming the input
    whose shape stays ambiguous or the length that nothing determines.

    Passes over the non-optional inputs in declaration order take each input whose shape has at
    most one packed item of undetermined length and none waiting for a symbol (symbols it binds
    count for the inputs after it); passes repeat while they make progress. Optional inputs
    come last, the same way. The @using entries `early_usings` selects (by `profile`) are
    known from the start.
    """
    early = set().union(*(using_targets(u.target) for u in
                          early_usings(attributes, usings, profile)))
    using_names = set().union(*(using_targets(u.target) for u in usings))
    state = _BindingState(known=frozenset(initially_known(attributes) | early),
                   available=frozenset(_bound_before_inputs(attributes) | early),
                   reserved=frozenset({a.name for a in attributes} | using_names),
                   usings=frozenset(using_names - early))
    order: list[ast.ParamDecl] = []
    for group in ([i for i in inputs if not i.type.optional],
                  [i for i in inputs if i.type.optional]):
        pending = list(group)
        progress = True
        while pending and progress:
            progress = False
            for decl in list(pending):
                flexible, waiting = _open_items(decl, state)
                if not waiting and len(flexible) <= 1:
                    order.append(decl)
                    state = state.after(decl)
                    pending.remove(decl)
                    progress = True
        if pending:
            raise _unbindable(pending[0], state)
    return order


def _unbindable(decl: ast.ParamDecl, state: _BindingState) -> BindingDiagnostic:
    """Why `decl` has no place in the binding order: a length nothing determines, or more than
    one flexible item."""
    flexible, waiting = _open_items(decl, state)
    own = {decl.type.rank} if decl.type.rank else set()
    lengths = [e.pack.length for e in flexible + waiting if e.pack and e.pack.length is not None]
    hidden = sorted(set().union(*(free_names(e) for e in lengths)) & state.usings)
    notes = [f"'{name}' is a @using symbol: @using symbols are not visible in @input (spec "
             f"§2.9; under --profile khronos, those computed from attributes alone are)"
             for name in hidden]
    if waiting:
        length = waiting[0].pack.length
        missing = sorted(free_names(length) - own - state.available)
        return BindingDiagnostic(
            f"the length {span_text(length.span)} of a packed extent of input '{decl.name}' "
            f"uses {', '.join(missing)}, which no attribute or input shape defines before it",
            length.span, notes + [
                "a pack length is an int or bool expression of attributes and symbols of other "
                "inputs, or an affine expression a * x + b of a new symbol x (spec §2.6)"])
    names = ", ".join(sorted({e.value.name for e in flexible if isinstance(e.value, ast.Name)}))
    return BindingDiagnostic(
        f"the shape of input '{decl.name}' cannot be bound unambiguously: more than one "
        f"packed extent ({names}) has an unknown length", decl.span,
        notes + ["give all but one of their lengths by an attribute or by another input "
                 "(spec §2.6.1)"])


def check_deferred_attributes(attributes: tuple[ast.ParamDecl, ...],
                              inputs: tuple[ast.ParamDecl, ...]) -> None:
    """§2.6.1: a deferred default (non-constant) must be computable from the attributes and the
    symbols the inputs bind; otherwise the definition is invalid."""
    known = {a.name for a in attributes}
    for decl in inputs:
        known |= _symbols_of(decl)
        for extent in decl.type.shape or ():
            known |= free_names(extent.value) if isinstance(extent.value, ast.Name) else set()
    deferred = set()
    for attribute in attributes:
        if attribute.default is None or _is_constant(attribute.default):
            continue
        deferred.add(attribute.name)
        missing = sorted(free_names(attribute.default) - known)
        if missing:
            raise BindingDiagnostic(
                f"the default of attribute '{attribute.name}' uses {', '.join(missing)}, which "
                f"no attribute or input shape defines", attribute.default.span)
    for decl in inputs:
        for extent in decl.type.shape or ():
            read = free_names((extent.value, extent.bound,
                               extent.pack.length if extent.pack else None)) & deferred
            if read:
                name = sorted(read)[0]
                raise BindingDiagnostic(
                    f"the shape of input '{decl.name}' reads attribute '{name}', whose "
                    "default is evaluated only after the inputs are bound (spec §2.6.1 step "
                    "3): its extent could be neither deduced nor checked", extent.span)


# Binding orders by definition (its syntax tree), per `Profile.using_in_inputs`: see
# `definition_order`.
_ORDERS: IdentityCache[dict[str, tuple[int, ...]]] = IdentityCache(1024)


def _entries(definition: ast.OperatorDef, kind: str) -> tuple:
    block = definition.block(kind)
    return block.entries if block else ()


def definition_order(definition: ast.OperatorDef,
                     profile: rules.Profile = rules.SPEC) -> list[ast.ParamDecl]:
    """The checked binding order of a definition's inputs (§2.6.1: it depends on the definition
    only, and on which @using symbols the profile lets input shapes use, `early_usings`),
    computed once per definition tree (parsed files are shared, so the standard library's once
    per process) and reused by every instantiation, as positions in @input. A diagnostic is not
    cached."""
    attributes, inputs = _entries(definition, "attrib"), _entries(definition, "input")
    orders = _ORDERS.get(definition)
    if orders is None:
        orders = {}
        _ORDERS.put(definition, orders)
    positions = orders.get(profile.using_in_inputs)
    if positions is None:
        order = binding_order(attributes, inputs, _entries(definition, "using"), profile)
        check_deferred_attributes(attributes, inputs)
        positions = tuple(next(i for i, decl in enumerate(inputs) if decl is chosen)
                          for chosen in order)
        orders[profile.using_in_inputs] = positions
    return [inputs[i] for i in positions]
