"""User-facing diagnostics: errors and warnings that carry source spans and an operator call stack.

Every mistake in a user's SkriptND text or invocation reaches the user as a `Diagnostic`,
rendered as

    path:line:col: error: message
       12 |     stride > 0: "'stride' must be positive", stride;
          |                 ^^^^^^^^^^^^^^^^^^^^^^^^^^^
      a note line
      while invoking nn.conv (model/main.sknd:40:9)

never as a Python traceback (docs/api.md "Exit status": a traceback is a bug, exit 3).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, ClassVar

from refinterp.core.source import Span

# Every diagnostic has a stable code: tools (the golden suite's error cases, the harness, CI
# scripts) match on codes, never on message text. A code is never reused for another meaning.
# docs/api.md "Diagnostic codes" lists them; tests/test_docs_api.py checks that every code used
# in the source is listed here, and that this table and the page's list the same codes.
CODES: dict[str, str] = {
    "E0100": "syntax error",
    "E0200": "module or file cannot be found or read",
    "E0201": "import cycle",
    "E0202": "an imported module defines a graph",
    "E0203": "no operator or graph of that name",
    "E0300": "invalid invocation",
    "E0301": "unknown attribute",
    "E0302": "attribute not given (no default)",
    "E0303": "attribute of the wrong type or length",
    "E0304": "unknown input",
    "E0305": "input not given",
    "E0306": "input of the wrong type, rank or shape",
    "E0307": "assertion failed",
    "E0308": "generic type cannot be bound",
    "E0400": "type error in an expression",
    "E0401": "undefined name",
    "E0402": "compile-time evaluation error",
    "E0500": "invalid @lower block",
    "E0501": "index out of range",
    "E0502": "integer result outside int64",
    "E0503": "evaluation error in a @lower formula",
    "E0600": "invalid composition",
    "E0601": "unknown operator",
    "E0602": "wrong number of arguments or results",
    "E0603": "composed output differs from its declaration",
    "E0604": "iteration or nesting limit exceeded",
    "E0605": "private operator invoked from another module",
    "E0606": "operator has no implementation",
    "E0607": "invalid loop count or branch condition",
    "E0700": "no value for a variable",
    "E0701": "variable value of the wrong type or shape",
    "E0702": "parameter entry that is no variable of the graph",
    "E0800": "file cannot be read or is damaged",
    "E0801": "file cannot be written",
    "E0802": "array of an unsupported dtype",
    "E0803": "file is not SkriptND text",
    "E0900": "invalid input arrays for the invocation",
    "E0901": "invalid option value",
    "E1000": "invalid @quantize entry",
    "E1100": "invalid golden case table",
    "E1101": "golden case does not build as its table says",
    "E1102": "golden suite fails verification",
    "E1200": "tensor larger than the tensor size limit",
    "E1201": "@lower iteration space larger than its limit",
    "E1202": "pack of tensors longer than the pack length limit",
    "E1203": "run exceeds its work budget",
    "E1204": "run exceeds its time limit",
    "E1205": "out of memory",
    "E1300": "optional attribute with an explicit default",
    "E1301": "intermediate name bound twice in one @compose block",
    "E1302": "variable with an explicit value",
    "E1303": "unrolled loop without a compile-time count",
    "E1304": "model main module without a graph",
    "E1305": "optional expression unresolved in a @lower right-hand side",
    "E1306": "dynamic extent of a main-graph input without an upper bound",
    "E1307": "a block yields an optional expression",
    "W0001": "warning",
    "W1300": "input declared but never used",
    "N0001": "note",
}


@dataclass(frozen=True)
class Frame:
    """One entry of the operator call stack: the invoked operator and where it was invoked."""

    operator: str
    span: Span


@dataclass
class Diagnostic(Exception):
    """An error (or warning) in the user's input, located by a span."""

    message: str
    span: Span | None = None
    notes: list[str] = field(default_factory=list)
    stack: list[Frame] = field(default_factory=list)
    severity: str = "error"
    code: str = ""
    # other places that explain the error, each with a label (e.g. the stdlib definition whose
    # assertion failed, when the primary span is the user's invocation)
    related: list[tuple[Span, str]] = field(default_factory=list)

    default_code: ClassVar[str] = "E0300"

    def __post_init__(self) -> None:
        super().__init__(self.message)
        if not self.code:
            self.code = {"warning": "W0001", "note": "N0001"}.get(self.severity,
                                                                  self.default_code)

    def __str__(self) -> str:
        return render(self)

    def with_frame(self, frame: Frame) -> "Diagnostic":
        """Record that this error happened while invoking `frame.operator` (innermost first)."""
        self.stack.append(frame)
        return self


    def as_json(self) -> dict[str, Any]:
        """The diagnostic as JSON data: code, severity, message, primary location, related
        locations, notes and the operator call stack (innermost first)."""
        return {"code": self.code, "severity": self.severity, "message": self.message,
                "location": _location(self.span),
                "related": [{**_location(span), "label": label} for span, label in self.related],
                "notes": list(self.notes),
                "stack": [{"operator": f.operator, **_location(f.span)} for f in self.stack]}


def did_you_mean(name: str, choices: list[str], quote: bool = True,
                 show: Callable[[str], str] | None = None) -> str | None:
    """THE did-you-mean note: `did you mean 'a' or 'b'?` for the (at most three) choices close
    to `name`, or None; `show` spells a choice (e.g. qualified with its module)."""
    import difflib  # only for a mistake (start-up time)

    close = difflib.get_close_matches(name, choices)
    if not close:
        return None
    spelled = [show(c) if show else c for c in close]
    return "did you mean " + " or ".join(f"'{c}'" if quote else c for c in spelled) + "?"


def _location(span: Span | None) -> dict[str, Any] | None:
    if span is None or span.source is None:
        return None
    return {"file": span.path, "line": span.line, "col": span.col, "end_line": span.end_line,
            "end_col": span.end_col}


class SyntaxDiagnostic(Diagnostic):
    """A lexical or grammatical error."""

    default_code = "E0100"


class ModuleDiagnostic(Diagnostic):
    """A module could not be found or imports form a cycle."""

    default_code = "E0200"


def _excerpt(span: Span, indent: str = "") -> list[str]:
    """The source line of a span with a caret under it."""
    text = span.source.line_text(span.line).replace("\t", " ")
    if span.end_line == span.line:
        width = max(1, span.end_col - span.col)
    else:
        width = max(1, len(text) - span.col + 1)
    return [f"{indent}{span.line:>5} | {text}",
            f"{indent}{'':>5} | {' ' * (span.col - 1)}{'^' * width}"]


def render(diag: Diagnostic) -> str:
    """Render a diagnostic as plain text: `path:line:col: error: message [CODE]`, the source
    line with a caret, notes, related places (each with its line and caret), the call stack."""
    span = diag.span
    lines: list[str] = []
    suffix = f" [{diag.code}]" if diag.severity in ("error", "warning") and diag.code else ""
    if span is not None and span.source is not None and span.line > 0:
        lines.append(f"{span.path}:{span.line}:{span.col}: {diag.severity}: {diag.message}"
                     f"{suffix}")
        lines.extend(_excerpt(span))
    elif span is not None and span.source is not None:
        lines.append(f"{span.path}: {diag.severity}: {diag.message}{suffix}")
    else:
        lines.append(f"{diag.severity}: {diag.message}{suffix}")
    lines.extend(f"  {note}" for note in diag.notes)
    for related, label in diag.related:
        lines.append(f"  {related}: {label}")
        if related.source is not None and related.line > 0:
            lines.extend(_excerpt(related, "  "))
    frames = [f"  while invoking {frame.operator} ({frame.span})" for frame in diag.stack]
    index = 0
    while index < len(frames):  # a recursion repeats one frame: print it once with a count
        repeat = 1
        while index + repeat < len(frames) and frames[index + repeat] == frames[index]:
            repeat += 1
        lines.append(frames[index])
        if repeat > 2:
            lines.append(f"  ... the same frame {repeat - 1} more times")
        elif repeat == 2:
            lines.append(frames[index])
        index += repeat
    return "\n".join(lines)


class TensorFileDiagnostic(Diagnostic):
    """A tensor file cannot be read or written."""

    default_code = "E0800"


class TypeDiagnostic(Diagnostic):
    """A compile-time expression is ill-typed."""

    default_code = "E0400"


class EvalDiagnostic(Diagnostic):
    """Evaluating a well-typed expression failed (division by zero, index out of range, ...)."""

    default_code = "E0402"


class BindingDiagnostic(Diagnostic):
    """An operator definition whose inputs cannot be bound unambiguously."""

    default_code = "E0300"


@dataclass
class InvocationDiagnostic(Diagnostic):
    """The invocation is invalid for this definition (a failed assertion, a shape mismatch...).

    `subject` names the argument at fault, ("attribute", name) or ("input", name), so that an
    invoking @compose can point at that argument of its call (docs/api.md "Where an error is
    reported")."""

    subject: tuple[str, str] | None = None

    default_code = "E0300"


class LoweringDiagnostic(Diagnostic):
    """A @lower block that cannot be planned (wrong target, two initialisations, ...)."""

    default_code = "E0500"


class EngineDiagnostic(Diagnostic):
    """A @lower formula failed while running (an unguarded index out of range, ...)."""

    default_code = "E0503"


class ParameterDiagnostic(Diagnostic):
    """A variable's value is missing, mis-typed or mis-shaped, or cannot be saved."""

    default_code = "E0700"


class QuantizationDiagnostic(Diagnostic):
    """A @quantize entry names an unknown tensor or an unsuitable operator."""

    default_code = "E1000"


class ComposeDiagnostic(Diagnostic):
    """A composition cannot run (unknown operator, wrong arguments, unsupported construct...)."""

    default_code = "E0600"


class FileDiagnostic(Diagnostic):
    """A data file cannot be read or written, or holds arrays refinterp cannot use."""

    default_code = "E0800"


class SelectionDiagnostic(Diagnostic):
    """No operator or graph of the requested name."""

    default_code = "E0203"


class ArgumentDiagnostic(Diagnostic):
    """An argument of an API call (or command-line option) is invalid."""

    default_code = "E0901"


class GoldenDiagnostic(Diagnostic):
    """A golden case table, case or suite that is wrong (refinterp.golden)."""

    default_code = "E1100"
