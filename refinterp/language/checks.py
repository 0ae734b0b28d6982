"""The static checks of a definition (docs/semantics.md "Static rules"): the spec's rules that
every operator or graph definition must keep, decided from its text alone, without
instantiating anything (no attribute values, no input shapes).

`check_module` checks every definition of a parsed module on its own; `check_main` adds the
rules of a model's main module. The loader (`language.modules`) runs both on every module that
is not the bundled standard library, and raises the first error, so `eval`, `shapes` and
`golden` refuse an invalid definition whether or not the invalid part is reached; `refinterp
lint` (api.lint) reports every finding, warnings included, for any module.
"""

from __future__ import annotations

from refinterp.core.diagnostics import BindingDiagnostic, Diagnostic, TypeDiagnostic
from refinterp.language.binding import affine_form, definition_order, using_targets
from refinterp.language.types import INT, Type, TypeScope, check_expr, dtype_scope, type_from_spec
from refinterp.numeric import rules
from refinterp.syntax import ast
from refinterp.language.binding import free_names
from refinterp.syntax.visitor import children, walk

# The codes of the static rules (docs/api.md "Diagnostic codes").
OPTIONAL_DEFAULT = "E1300"
NAME_BOUND_TWICE = "E1301"
VARIABLE_VALUE = "E1302"
UNROLL_COUNT = "E1303"
MAIN_WITHOUT_GRAPH = "E1304"
UNRESOLVED_OPTIONAL = "E1305"
MAIN_GRAPH_BOUND = "E1306"
OPTIONAL_YIELD = "E1307"
UNUSED_INPUT = "W1300"

# the blocks that give a definition a body: a definition with none of them only declares
# its interface (a primitive), so its inputs are not "unused"
_BODY_BLOCKS = ("compose", "lower", "update")


def check_module(module: ast.Module, profile: rules.Profile = rules.SPEC) -> list[Diagnostic]:
    """Every finding of the static rules in the definitions of `module`, in source order;
    `profile` decides which @using symbols input shapes may use (the binding order)."""
    found: list[Diagnostic] = []
    invoked = _invoked_names(module)
    for definition in module.definitions:
        found.extend(check_definition(definition, profile))
        if definition.is_graph and definition.name not in invoked:  # a candidate main graph
            found.extend(check_main_graph(definition, profile))
    return found


def check_main(module: ast.Module, is_model: bool) -> list[Diagnostic]:
    """The rules of a main module: a model folder's main.sknd holds at least one graph
    (spec §2.15)."""
    if not is_model or any(d.is_graph for d in module.definitions):
        return []
    return [Diagnostic("a model's main module must contain at least one graph definition "
                       "(spec §2.15)", module.span,
                       ["\"[The main module] must contain at least one graph definition\""],
                       code=MAIN_WITHOUT_GRAPH)]


def check_main_graph(definition: ast.OperatorDef,
                     profile: rules.Profile = rules.SPEC) -> list[Diagnostic]:
    """Spec §2.6 (L713): "in case of the *main* graph, the upper bound must be defined" for
    every dynamic extent of an input, and its rank too ("the rank must be defined"). An
    extent is dynamic when it is `~` or reads a shape symbol that is no attribute of the
    graph; a symbol needs its bound once (`x: real[s|10]; y: real[s]`, L699). Only where
    `profile.main_graph_bounds` is "required" (`spec`); `khronos` runs such a graph, as the
    Khronos tools do, checking the bounds that are written. The main graph is the one a run
    starts from (`run.compose.Executor.run`); `lint` checks every graph that no definition of
    its module invokes (an invoked graph is a subgraph, whose extents need no bound)."""
    if profile.main_graph_bounds != "required":
        return []
    inputs = _params(definition, "input")
    static = {p.name for p in _params(definition, "attrib")}
    bounded = {e.value.name for p in inputs if p.type.shape
               for e in p.type.shape if e.bound is not None and isinstance(e.value, ast.Name)}
    note = ["\"in case of the main graph, the upper bound must be defined\" (for example "
            "`input: real[~|10, ~|20]`); a subgraph invoked by control flow needs none"]
    found: list[Diagnostic] = []
    for param in inputs:
        spec = param.type
        if spec.shape is None or spec.rank is not None:
            found.append(Diagnostic(
                f"input '{param.name}' of main graph '{definition.name}' must declare its "
                "rank and the upper bound of each dynamic extent (spec §2.6)", spec.span,
                list(note), code=MAIN_GRAPH_BOUND))
            continue
        for extent in spec.shape:
            if extent.pack is not None and extent.pack.length is None:
                found.append(Diagnostic(
                    f"input '{param.name}' of main graph '{definition.name}' must define its "
                    "rank: a packed extent needs its count, `~|10..(3)` (spec §2.6)",
                    extent.span, list(note), code=MAIN_GRAPH_BOUND))
                continue
            if extent.bound is not None:
                continue
            if isinstance(extent.value, ast.Placeholder):
                symbol = "~"
            else:
                free = sorted(_shape_symbols(extent.value) - static - bounded)
                if not free:
                    continue
                symbol = free[0]
            shown = "'~'" if symbol == "~" else f"symbol '{symbol}'"
            found.append(Diagnostic(
                f"the dynamic extent {shown} of input '{param.name}' of main graph "
                f"'{definition.name}' has no upper bound (spec §2.6): write `{symbol}|N`",
                extent.span, list(note), code=MAIN_GRAPH_BOUND))
    return found


def _shape_symbols(expr: ast.Node) -> set[str]:
    """The names an extent expression reads, but through a member (`x.shape[0]` is as
    bounded as input x is)."""
    found: set[str] = set()
    stack: list[ast.Node] = [expr]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Member):
            continue
        if isinstance(node, ast.Name):
            found.add(node.name)
        stack.extend(children(node))
    return found


def _invoked_names(module: ast.Module) -> set[str]:
    """The unqualified names of everything the module's definitions invoke."""
    return {node.callee[-1] for definition in module.definitions for node in walk(definition)
            if isinstance(node, ast.Call)}


def check_definition(definition: ast.OperatorDef,
                     profile: rules.Profile = rules.SPEC) -> list[Diagnostic]:
    """The findings of the static rules in one operator or graph definition."""
    found: list[Diagnostic] = _binding_order(definition, profile)
    for block in definition.blocks:
        if block.kind == "attrib":
            found.extend(_optional_defaults(block))
        elif block.kind == "variable":
            found.extend(_variable_values(block))
        elif block.kind == "compose":
            found.extend(_names_bound_twice(block))
            found.extend(_optional_yields(block, _optional_names(definition)))
        elif block.kind == "lower":
            found.extend(_unresolved_optionals(block, _optional_names(definition)))
        if block.kind in ("compose", "update"):
            found.extend(_unrolls(block, _tensor_names(definition)))
    found.extend(_expression_types(definition))
    found.extend(_unused_inputs(definition))
    return found


def _binding_order(definition: ast.OperatorDef, profile: rules.Profile) -> list[Diagnostic]:
    """Spec §2.6.1: the binding order of the inputs, and the deferred attribute defaults,
    depend on the definition alone (binding.definition_order, which instantiation uses)."""
    try:
        definition_order(definition, profile)
    except BindingDiagnostic as diag:
        return [diag]
    return []


def errors(found: list[Diagnostic]) -> list[Diagnostic]:
    """The errors among `found` (the warnings left out)."""
    return [d for d in found if d.severity == "error"]


def _params(definition: ast.OperatorDef, kind: str) -> list[ast.ParamDecl]:
    return [entry for block in definition.blocks if block.kind == kind
            for entry in block.entries if isinstance(entry, ast.ParamDecl)]


def _optional_defaults(block: ast.Block) -> list[Diagnostic]:
    """Spec §2.5 (L574): an optional attribute has the implicit default null."""
    return [Diagnostic(f"optional attribute '{entry.name}' cannot have an explicit default "
                       "value (spec §2.5)", entry.default.span,
                       ["\"Attributes of optional types have an implicit default value of "
                        "null, and they cannot have an explicit default value\""],
                       code=OPTIONAL_DEFAULT)
            for entry in block.entries
            if isinstance(entry, ast.ParamDecl) and entry.type.optional
            and entry.default is not None]


def _variable_values(block: ast.Block) -> list[Diagnostic]:
    """Spec §2.7 (L871): a variable's value comes from a data file, never from its text."""
    return [Diagnostic(f"variable '{entry.name}' must not have its value defined in the "
                       "definition (spec §2.7)", entry.default.span,
                       ["\"Variables must not have their values explicitly defined, rather "
                        "they are stored in separate data files\""], code=VARIABLE_VALUE)
            for entry in block.entries
            if isinstance(entry, ast.ParamDecl) and entry.default is not None]


def _target_names(target: ast.Node) -> list[ast.LName]:
    """The named targets of one target (a name, a list, an unzipping), in order."""
    return [node for node in walk(target) if isinstance(node, ast.LName)]


def _names_bound_twice(block: ast.Block) -> list[Diagnostic]:
    """Spec §2.10 (L985): each intermediate tensor of a @compose block has a unique name.
    Checked over the block's own components (an embedded region or loop body is a scope of
    its own)."""
    found: list[Diagnostic] = []
    first: dict[str, ast.LName] = {}
    for component in block.entries:
        if not isinstance(component, ast.Component):
            continue
        for target in component.targets:
            for name in _target_names(target):
                if name.name in first:
                    found.append(Diagnostic(
                        f"'{name.name}' is bound twice in one @compose block: each "
                        "intermediate tensor must have a unique name (spec §2.10)", name.span,
                        ["\"each intermediate tensor must have a unique name\""],
                        code=NAME_BOUND_TWICE,
                        related=[(first[name.name].span, "first bound here")]))
                else:
                    first[name.name] = name
    return found


def _tensor_names(definition: ast.OperatorDef) -> set[str]:
    """The names of a definition's tensors known without values: its inputs, outputs,
    constants and variables (a tensor's .shape, .rank and .size are compile-time values)."""
    return {p.name for kind in ("input", "output", "constant", "variable")
            for p in _params(definition, kind)}


def _runtime_names(expr: ast.Node, tensors: set[str]) -> list[ast.Name]:
    """The tensor names `expr` reads as values (not through .shape, .rank or .size)."""
    found: list[ast.Name] = []
    stack: list[ast.Node] = [expr]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Member):
            continue  # x.shape / x.rank / x.size: compile-time
        if isinstance(node, ast.Name) and node.name in tensors:
            found.append(node)
        stack.extend(children(node))
    return found


def _unrolls(block: ast.Block, tensors: set[str]) -> list[Diagnostic]:
    """Spec §2.10 "Loop unrolling" (L1283): `unroll` needs a compile-time loop count, so it
    cannot be used with a `while` condition nor with a count read from a tensor."""
    found: list[Diagnostic] = []
    note = ["\"loop unrolling only works with loops that have a compile-time loop count, hence "
            "unrolling cannot be used with condition based looping\""]
    for node in walk(block):
        if not isinstance(node, ast.LoopExpr) or not node.unroll:
            continue
        condition = node.pre_condition or node.post_condition
        if condition is not None:
            found.append(Diagnostic("'unroll' cannot be used with a 'while' condition: "
                                    "unrolling needs a compile-time loop count (spec §2.10)",
                                    condition.span, list(note), code=UNROLL_COUNT))
        count = node.count.count if node.count is not None else None
        if count is not None:
            for name in _runtime_names(count, tensors):
                found.append(Diagnostic(
                    f"the count of an unrolled loop reads tensor '{name.name}', a run-time "
                    "value: unrolling needs a compile-time loop count (spec §2.10)",
                    name.span, list(note), code=UNROLL_COUNT))
    return found


def _unused_inputs(definition: ast.OperatorDef) -> list[Diagnostic]:
    """Inputs a definition with a body never reads: a warning (the spec does not forbid
    them, but they are usually a mistake)."""
    if not any(block.kind in _BODY_BLOCKS for block in definition.blocks):
        return []
    used: set[str] = set()
    for block in definition.blocks:
        if block.kind == "input":
            continue
        for node in walk(block):
            if isinstance(node, ast.Name):
                used.add(node.name)
            elif isinstance(node, ast.Quantization):
                used.add(".".join(node.tensor))
    for block in definition.blocks:  # an input's declared shape may name another input
        if block.kind == "input":
            for node in walk(block):
                if isinstance(node, ast.Name):
                    used.add(node.name)
    return [Diagnostic(f"input '{p.name}' of '{definition.name}' is declared but never used",
                       p.span, severity="warning", code=UNUSED_INPUT)
            for p in _params(definition, "input") if p.name not in used]


def _optional_names(definition: ast.OperatorDef) -> set[str]:
    """The definition's optional attributes and inputs (null when not given)."""
    return {p.name for kind in ("attrib", "input") for p in _params(definition, kind)
            if p.type.optional}


def _tested(condition: ast.Node | None) -> set[str]:
    """The names `condition` tests for null (`?x`, in a conjunction `?x && ?y && ...`)."""
    if isinstance(condition, ast.Unary) and condition.op == "?" and \
            isinstance(condition.operand, ast.Name):
        return {condition.operand.name}
    if isinstance(condition, ast.Binary) and condition.op == "&&":
        return _tested(condition.left) | _tested(condition.right)
    return set()


def _optional_at(expr: ast.Node, optional: set[str]) -> ast.Node | None:
    """The first sub-expression of `expr` that makes it optional (a name in `optional`, or an
    else-less select), or None when `expr` is resolved: `a ?? b` is optional only through
    `b`, `?a` never, and `?a ? e1 : e2` sees `a` promoted to non-optional in `e1` (§2.4).
    Without recursion (a formula may be a chain of thousands of terms)."""
    stack: list[tuple[ast.Node, set[str]]] = [(expr, optional)]
    while stack:
        node, names = stack.pop()
        if isinstance(node, ast.Name):
            if node.name in names:
                return node
        elif isinstance(node, ast.Unary) and node.op == "?":
            continue
        elif isinstance(node, ast.Binary) and node.op == "??":
            stack.append((node.right, names))
        elif isinstance(node, ast.Select):
            if node.otherwise is None:
                return node
            stack += [(node.otherwise, names), (node.then, names - _tested(node.cond)),
                      (node.cond, names)]
        else:
            stack += [(child, names) for child in reversed(list(children(node)))]
    return None


def _unresolved_optionals(block: ast.Block, optional: set[str]) -> list[Diagnostic]:
    """Spec §2.12 (L1378): "Expressions of optional type ... must be resolved on the
    right-hand-side (for example using the ?? operator)" -- whether the optional is given or
    not. A formula guarded by `| ?x` sees `x` as resolved; a loop-local scalar is optional
    when its value is."""
    found: list[Diagnostic] = []
    for formula in block.entries:
        if not isinstance(formula, ast.Lowering):
            continue
        names = optional - _tested(formula.condition)
        for local in formula.locals:
            if _optional_at(local.value, names) is not None:
                names = names | {local.name}
            else:
                names = names - {local.name}
        culprit = _optional_at(formula.value, names)
        if culprit is not None:
            what = f"'{culprit.name}'" if isinstance(culprit, ast.Name) else "a select " \
                "without an else branch"
            found.append(Diagnostic(
                f"the right-hand side of this @lower formula is optional through {what}: "
                "resolve it, e.g. with '??' (spec §2.12)", culprit.span,
                ["\"Expressions of optional type ... must be resolved on the right-hand-side "
                 "(for example using the ?? operator)\""], code=UNRESOLVED_OPTIONAL))
    return found


def _optional_yields(block: ast.Block, optional: set[str]) -> list[Diagnostic]:
    """Spec §2.10 (L1060): "The yielded results must not be optional expressions": a block
    (`{ ...; yield e; }`) that yields an optional attribute or input, or an else-less select.
    The consequent of `if ?o then ...` sees `o` as given (as `?o ? e1 : e2` does, §2.4)."""
    found: list[Diagnostic] = []
    stack: list[tuple[ast.Node, set[str]]] = [(block, optional)]  # no recursion: long chains
    while stack:
        node, names = stack.pop()
        if isinstance(node, ast.IfExpr):
            for condition, consequent in node.branches:
                stack.append((condition, names))
                stack.append((consequent, names - _tested(condition)))
            if node.otherwise is not None:
                stack.append((node.otherwise, names))
            continue
        if isinstance(node, ast.Region):
            for value in node.yields:
                culprit = _optional_at(value, names)
                if culprit is not None:
                    what = f"'{culprit.name}'" if isinstance(culprit, ast.Name) else \
                        "a select without an else branch"
                    found.append(Diagnostic(
                        f"this block yields an optional expression through {what}: resolve "
                        "it, e.g. with '??' (spec §2.10)", culprit.span,
                        ["\"The yielded results must not be optional expressions\""],
                        code=OPTIONAL_YIELD))
        stack.extend((child, names) for child in children(node))
    found.sort(key=lambda d: (d.span.line, d.span.col))
    return found


def _expression_types(definition: ast.OperatorDef) -> list[Diagnostic]:
    """The types of the compile-time expressions that can be typed from the declarations
    alone (§2.3, §2.4): the @using values, in order, and the @assert conditions, messages and
    printed values. A name the declarations do not type (a symbol only a value would give)
    leaves its expression to instantiation, which checks it again with values."""
    try:
        scope = _declared_scope(definition)
    except TypeDiagnostic as diag:
        return [diag]
    found: list[Diagnostic] = []
    for block in definition.blocks:
        for entry in block.entries:
            if isinstance(entry, ast.UsingDecl):
                static = _typed(entry.value, scope, found)
                names = using_targets(entry.target)
                if static is not None and isinstance(entry.target, ast.LName):
                    scope.symbols[entry.target.name] = static
                else:  # destructured or untyped: its names stay unknown here
                    for name in names:
                        scope.symbols.pop(name, None)
            elif isinstance(entry, ast.Assertion):
                for expr in (entry.cond, entry.message, *(p.value for p in entry.printed)):
                    if expr is not None:
                        _typed(expr, scope, found)
    return found


def _declared_scope(definition: ast.OperatorDef) -> TypeScope:
    """Types from the declarations: attributes, tensors, and the int symbols (extents, pack
    lengths, ranks) their shapes declare."""
    dtypes = dtype_scope(tuple(e for b in definition.blocks if b.kind == "dtype"
                               for e in b.entries))
    # a pack length may be a bool (`c..(ncx)`: c present or not, §2.6), whose symbol is then
    # no pack: a length reading a @using symbol or an attribute that is no int stays untyped
    not_int = {p.name for p in _params(definition, "attrib")
               if p.type.name != "int" or p.type.pack is not None}
    not_int |= {name for b in definition.blocks if b.kind == "using" for e in b.entries
                if isinstance(e, ast.UsingDecl) for name in using_targets(e.target)}
    untyped: set[str] = set()
    symbols: dict[str, Type] = {}

    def declare(expr: ast.Expr | None, packed: bool = False,
                length: ast.Expr | None = None) -> None:
        form = affine_form(expr) if expr is not None else None
        if form is None or form.symbol in not_int:
            return
        if length is not None and free_names(length) & not_int:
            untyped.add(form.symbol)
        symbols[form.symbol] = Type("int", packed=packed)

    for kind in ("input", "output", "constant", "variable"):
        for param in _params(definition, kind):
            for extent in param.type.shape or ():
                pack = extent.pack
                declare(extent.value, pack is not None or extent.distinct,
                        pack.length if pack is not None else None)
                if pack is not None:
                    declare(pack.length)
            if param.type.rank is not None:
                symbols[param.type.rank] = INT
            if param.type.pack is not None:
                declare(param.type.pack.length)
    for name in untyped:
        symbols.pop(name, None)
    for kind in ("attrib", "input", "output", "constant", "variable"):
        for param in _params(definition, kind):
            symbols[param.name] = type_from_spec(param.type, dtypes)
    return TypeScope(symbols, dtypes)


def _typed(expr: ast.Expr, scope: TypeScope, found: list[Diagnostic]) -> Type | None:
    """The static type of `expr`, or None where it cannot be typed without values (a name
    the scope lacks); a type error is added to `found`."""
    if not free_names(expr) <= set(scope.symbols):
        return None
    try:
        return check_expr(expr, scope)[id(expr)]
    except TypeDiagnostic as diag:
        found.append(diag)
        return None
