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

from refinterp.core.diagnostics import BindingDiagnostic, Diagnostic
from refinterp.language.binding import definition_order
from refinterp.numeric import rules
from refinterp.syntax import ast
from refinterp.syntax.visitor import children, walk

# The codes of the static rules (docs/api.md "Diagnostic codes").
OPTIONAL_DEFAULT = "E1300"
NAME_BOUND_TWICE = "E1301"
VARIABLE_VALUE = "E1302"
UNROLL_COUNT = "E1303"
MAIN_WITHOUT_GRAPH = "E1304"
UNRESOLVED_OPTIONAL = "E1305"
UNUSED_INPUT = "W1300"

# the blocks that give a definition a body: a definition with none of them only declares
# its interface (a primitive), so its inputs are not "unused"
_BODY_BLOCKS = ("compose", "lower", "update")


def check_module(module: ast.Module, profile: rules.Profile = rules.SPEC) -> list[Diagnostic]:
    """Every finding of the static rules in the definitions of `module`, in source order;
    `profile` decides which @using symbols input shapes may use (the binding order)."""
    found: list[Diagnostic] = []
    for definition in module.definitions:
        found.extend(check_definition(definition, profile))
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
        elif block.kind == "lower":
            found.extend(_unresolved_optionals(block, _optional_names(definition)))
        if block.kind in ("compose", "update"):
            found.extend(_unrolls(block, _tensor_names(definition)))
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
    `b`, `?a` never, and `?a ? e1 : e2` sees `a` promoted to non-optional in `e1` (§2.4)."""
    if isinstance(expr, ast.Name):
        return expr if expr.name in optional else None
    if isinstance(expr, ast.Unary) and expr.op == "?":
        return None
    if isinstance(expr, ast.Binary) and expr.op == "??":
        return _optional_at(expr.right, optional)
    if isinstance(expr, ast.Select):
        if expr.otherwise is None:
            return expr
        return (_optional_at(expr.cond, optional)
                or _optional_at(expr.then, optional - _tested(expr.cond))
                or _optional_at(expr.otherwise, optional))
    for child in children(expr):
        culprit = _optional_at(child, optional)
        if culprit is not None:
            return culprit
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
