"""Where an error is reported (docs/api.md): an invocation the invoked operator rejects is
reported at the call — at the argument at fault when there is one — and an error inside a
standard-library operator at the innermost call in the user's code; the old place stays as a
related span. Also the span of an output's declaration, for composed outputs that differ from
it."""

from __future__ import annotations

from typing import Any

from refinterp.core.diagnostics import Diagnostic, InvocationDiagnostic
from refinterp.language.modules import LoadedModule
from refinterp.syntax import ast


def relocate(diag: Diagnostic, node: ast.Call, caller: LoadedModule,
         definition: ast.OperatorDef, library_files: set[str]) -> None:
    """Put the primary position of an error where the mistake is (docs/api.md "Where an
    error is reported"), keeping the old one as a related span:
    - an invocation the invoked operator rejects (an unknown or ill-typed attribute, a
      missing or mis-shaped input, a failed assertion) is reported at the call, at the
      argument at fault when there is one;
    - any error inside a standard-library operator is reported at the innermost call in
      the user's code."""
    span = diag.span
    if span is None:
        return
    own = isinstance(diag, InvocationDiagnostic) and not diag.stack
    library = span.path in library_files and not caller.library
    if not (own or library):
        return
    callee = ".".join(node.callee)
    label = f"the assertion of {callee}" if diag.code == "E0307" else \
        f"in {callee}" if library and not own else f"as declared by {callee}"
    diag.related.insert(0, (span, label))
    diag.span = _argument_span(node, definition, diag.subject) if own and \
        isinstance(diag, InvocationDiagnostic) else node.span


def declaration_span(definition: ast.OperatorDef, name: str) -> Any:
    """The span of the declaration of output, variable, constant or input `name` (else the
    definition's)."""
    for kind in ("output", "variable", "constant", "input"):
        block = definition.block(kind)
        for decl in block.entries if block else ():
            if decl.name == name:
                return decl.span
    return definition.span


def _argument_span(node: ast.Call, definition: ast.OperatorDef,
                   subject: tuple[str, str] | None) -> Any:
    """The span of the argument `subject` names in a call: an attribute `name = value`, or the
    positional input of that name (by the callee's declaration order); else the call."""
    if subject is None:
        return node.span
    kind, name = subject
    if kind == "attribute":
        for attribute in node.attributes or ():
            if attribute.name == name:
                return attribute.span
    if kind == "input":
        inputs = definition.block("input")
        names = [d.name for d in inputs.entries] if inputs else []
        if name in names and names.index(name) < len(node.args):
            return node.args[names.index(name)].span
    return node.span
