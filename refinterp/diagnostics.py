"""User-facing diagnostics: errors and warnings that carry source spans and an operator call stack.

Every mistake in a user's SkriptND text or invocation reaches the user as a `Diagnostic`, rendered as

    path:line:col: error: message
       12 |     stride > 0: "'stride' must be positive", stride;
          |                 ^^^^^^^^^^^^^^^^^^^^^^^^^^^
      a note line
      while invoking nn.conv (model/main.sknd:40:9)

never as a Python traceback (see docs/architecture.md).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .source import Span


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

    def __post_init__(self) -> None:
        super().__init__(self.message)

    def __str__(self) -> str:
        return render(self)

    def with_frame(self, frame: Frame) -> "Diagnostic":
        """Record that this error happened while invoking `frame.operator` (innermost first)."""
        self.stack.append(frame)
        return self


class SyntaxDiagnostic(Diagnostic):
    """A lexical or grammatical error."""


class ModuleDiagnostic(Diagnostic):
    """A module could not be found or imports form a cycle."""


def render(diag: Diagnostic) -> str:
    """Render a diagnostic as plain text (path:line:col, source line, caret, notes, call stack)."""
    span = diag.span
    lines: list[str] = []
    if span is not None and span.source is not None and span.line > 0:
        lines.append(f"{span.path}:{span.line}:{span.col}: {diag.severity}: {diag.message}")
        text = span.source.line_text(span.line).replace("\t", " ")
        gutter = str(span.line)
        lines.append(f"{gutter:>5} | {text}")
        if span.end_line == span.line:
            width = max(1, span.end_col - span.col)
        else:
            width = max(1, len(text) - span.col + 1)
        lines.append(f"{'':>5} | {' ' * (span.col - 1)}{'^' * width}")
    elif span is not None and span.source is not None:
        lines.append(f"{span.path}: {diag.severity}: {diag.message}")
    else:
        lines.append(f"{diag.severity}: {diag.message}")
    lines.extend(f"  {note}" for note in diag.notes)
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
