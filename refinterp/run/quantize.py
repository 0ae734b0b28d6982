"""@quantize entries (spec §2.14): each names a tensor (possibly by a scoped name, §2.10) and a
quantization operator with attributes; `refinterp shapes --quant` lists them.

Checks, made when the operator is instantiated:
- the tensor exists: an input, output, variable, constant or intermediate tensor of the operator
  itself, or `label.name` reaching into a labelled (explicitly or automatically) invocation,
  where only variables and constants are visible unless the invoked operator is `public`, and
  further labels nest (`op1.op2.w`);
- the quantization operator exists and has exactly one input and one output;
- where the tensor's type is known at instantiation (inputs, outputs, variables, constants of
  the operator itself), the quantization operator is instantiated on it, so invalid attributes
  are reported now; the types of intermediate and nested tensors are known only at run time.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from refinterp.numeric import rules
from refinterp.language.modules import find_operator
from refinterp.core.diagnostics import Diagnostic, Frame, QuantizationDiagnostic
from refinterp.language.expr import evaluate
from refinterp.language.instance import Invocation, OperatorInstance, TensorType, instantiate
from refinterp.language.modules import LoadedModule
from refinterp.core.source import Span
from refinterp.syntax import ast
from refinterp.syntax.visitor import ExprVisitor, children, nodes
from refinterp.language.values import Value, to_json_data


@dataclass
class QuantEntry:
    """One @quantize entry, attached to its tensor."""

    tensor: str
    kind: str                 # input, output, variable, constant, intermediate or nested
    info: TensorType | tuple | None
    operator: str             # as written, e.g. quant.zero_point_linear_quantize
    attributes: dict[str, Value]
    span: Span

    def as_json(self) -> dict[str, Any]:
        info = self.info
        return {"tensor": self.tensor, "kind": self.kind, "operator": self.operator,
                "attributes": {k: to_json_data(v) for k, v in self.attributes.items()},
                "type": None if info is None else
                [i.as_json() for i in info] if isinstance(info, tuple) else info.as_json()}


def declared_tensors(definition: ast.OperatorDef) -> dict[str, str]:
    """The tensors an operator declares or assigns at the top level of @compose/@update, with
    their kind."""
    kinds: dict[str, str] = {}
    for block, kind in (("input", "input"), ("output", "output"), ("variable", "variable"),
                        ("constant", "constant")):
        found = definition.block(block)
        for decl in found.entries if found else ():
            kinds[decl.name] = kind
    for block in ("compose", "update"):
        found = definition.block(block)
        for component in found.entries if found else ():
            for name in _target_names(component.targets):
                kinds.setdefault(name, "intermediate")
    return kinds


def invocation_labels(definition: ast.OperatorDef) -> dict[str, list[ast.Call]]:
    """The labels of the invocations in an operator's @compose block: explicit labels, and the
    result name of a one-result component (auto-label rule 2). Several candidates for one label
    come from branches."""
    labels: dict[str, list[ast.Call]] = {}
    found = definition.block("compose")
    for component in found.entries if found else ():
        for call in _calls(component.value):
            if call.label is not None:
                labels.setdefault(call.label, []).append(call)
        targets = component.targets
        if len(targets) == 1 and isinstance(targets[0], ast.LName):
            for call in _top_calls(component.value):
                if call.label is None:
                    labels.setdefault(targets[0].name, []).append(call)
    return labels


def quantization(instance: OperatorInstance, module: LoadedModule,
                 profile: rules.Profile = rules.SPEC) -> list[QuantEntry]:
    """The checked @quantize entries of an instantiated operator."""
    block = instance.definition.block("quantize")
    entries: list[QuantEntry] = []
    env = instance.environment(profile)
    for entry in block.entries if block else ():
        kind = _resolve_tensor(entry.tensor, instance.definition, module, entry.span, own=True)
        found = find_operator(entry.operator, module)
        name = ".".join(entry.operator)
        if found is None:
            raise QuantizationDiagnostic(f"unknown quantization operator '{name}'", entry.span)
        quant_def, _ = found
        inputs = quant_def.block("input")
        outputs = quant_def.block("output")
        if len(inputs.entries if inputs else ()) != 1 or \
                len(outputs.entries if outputs else ()) != 1:
            raise QuantizationDiagnostic(
                f"quantization operator '{name}' must have exactly one input and one output "
                f"(spec §2.14)", entry.span)
        attributes = {a.name: evaluate(a.value, env) for a in entry.attributes or ()}
        info = _known_type(instance, entry.tensor) if kind != "nested" else None
        if info is not None and not isinstance(info, tuple):
            generics = tuple(instance.dtypes.get(g.name, g.name) for g in entry.generics)
            invocation = Invocation(attributes, {inputs.entries[0].name: info}, generics,
                                    profile)
            try:
                instantiate(quant_def, invocation)
            except Diagnostic as diag:
                raise diag.with_frame(Frame(name, entry.span)) from None
        entries.append(QuantEntry(".".join(entry.tensor), kind, info, name, attributes,
                                  entry.span))
    return entries


def _known_type(instance: OperatorInstance, path: tuple[str, ...]) -> TensorType | tuple | None:
    if len(path) != 1:
        return None
    name = path[0]
    if name in instance.outputs:
        return instance.outputs[name]
    if name in instance.variables:
        return instance.variables[name]
    if name in instance.constants:
        return instance.constants[name][0]
    value = instance.symbols.get(name)
    shape = getattr(value, "shape", None)
    if shape is not None:  # an input: bound as a TensorValue symbol
        return TensorType(value.dtype, tuple(shape))
    return None


def _resolve_tensor(path: tuple[str, ...], definition: ast.OperatorDef,
                    module: LoadedModule, span: Span, own: bool) -> str:
    """The kind of tensor a (scoped) name refers to, seen from `definition`."""
    head, *rest = path
    if not rest:
        kinds = declared_tensors(definition)
        kind = kinds.get(head)
        visible = own or definition.public or kind in ("variable", "constant")
        if kind is None or not visible:
            where = f"operator '{definition.name}'"
            hint = [] if kind is None else [
                f"'{head}' is {'an' if kind[0] in 'aeiou' else 'a'} {kind} of {where}, "
                f"which is not public: only its variables and constants are accessible"]
            raise QuantizationDiagnostic(f"no accessible tensor '{'.'.join(path)}' in {where}",
                                         span, hint)
        return kind if own else "nested"
    calls = invocation_labels(definition).get(head)
    if not calls:
        raise QuantizationDiagnostic(
            f"'{head}' is not the label of an invocation in '{definition.name}'", span,
            ["labels: " + (", ".join(sorted(invocation_labels(definition))) or "none")])
    errors: list[Diagnostic] = []
    for call in calls:
        found = find_operator(call.callee, module)
        if found is None:
            continue
        callee, callee_module = found
        try:
            _resolve_tensor(tuple(rest), callee, callee_module, span, own=False)
            return "nested"
        except QuantizationDiagnostic as diag:
            errors.append(diag)
    if errors:
        raise errors[0]
    raise QuantizationDiagnostic(f"'{head}' labels no known operator", span)


def _target_names(targets: tuple) -> list[str]:
    names: list[str] = []
    for target in targets:
        if isinstance(target, ast.LName):
            names.append(target.name)
        elif isinstance(target, (ast.LList, ast.LZip)):
            names.extend(_target_names(target.items))
    return names


class _Calls(ExprVisitor[None]):
    """Appends to `found` every call in a right-hand side, in source order (a call's
    attribute values are not searched)."""

    def visit_Call(self, node: ast.Call, found: list[ast.Call]) -> None:
        found.append(node)
        for arg in node.args:
            self.visit(arg, found)

    def generic_visit(self, node: ast.Node, found: list[ast.Call]) -> None:
        for child in children(node):
            self.visit(child, found)


_CALLS = _Calls()


def _calls(node: object) -> list[ast.Call]:
    """Every call in a right-hand side (a node, or a tuple of them)."""
    found: list[ast.Call] = []
    for item in nodes(node):
        _CALLS.visit(item, found)
    return found


class _TopCalls(ExprVisitor[list]):
    """The calls a right-hand side may reduce to (through selects and branches)."""

    def visit_Call(self, node: ast.Call) -> list[ast.Call]:
        return [node]

    def visit_Select(self, node: ast.Select) -> list[ast.Call]:
        return self.visit(node.then) + self.visit(node.otherwise)

    def visit_IfExpr(self, node: ast.IfExpr) -> list[ast.Call]:
        return [c for _, then in node.branches for c in self.visit(then)] + \
            self.visit(node.otherwise)

    def generic_visit(self, node: object) -> list[ast.Call]:
        return []  # anything else (and an absent else-branch) reduces to no call


_top_calls = _TopCalls().visit
