"""Source files and spans: exact positions for every token and AST node."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path


# The largest source file read (docs/limits.md): a module of a few hundred thousand lines; what
# a model file holds is kilobytes (AlexNet's main.sknd is a few hundred lines).


@dataclass(frozen=True)
class SourceFile:
    """The text of one SkriptND source file, with line lookup for diagnostics."""

    path: str
    text: str
    line_starts: tuple[int, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        starts = [0]
        find, text = self.text.find, self.text
        index = find("\n")
        while index >= 0:  # str.find scans in C: a 100 KB module in well under a millisecond
            starts.append(index + 1)
            index = find("\n", index + 1)
        object.__setattr__(self, "line_starts", tuple(starts))

    def line_text(self, line: int) -> str:
        """The text of 1-based line `line`, without its newline."""
        if line < 1 or line > len(self.line_starts):
            return ""
        start = self.line_starts[line - 1]
        end = self.text.find("\n", start)
        return self.text[start:] if end < 0 else self.text[start:end]

    def position(self, offset: int) -> tuple[int, int]:
        """1-based (line, column) of a character offset."""
        lo, hi = 0, len(self.line_starts) - 1
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if self.line_starts[mid] <= offset:
                lo = mid
            else:
                hi = mid - 1
        return lo + 1, offset - self.line_starts[lo] + 1

    def span(self, start: int, end: int) -> "Span":
        """The span of characters [start, end) of this file."""
        line, col = self.position(start)
        end_line, end_col = self.position(max(start, end))
        return Span(self, line, col, end_line, end_col)


@dataclass(frozen=True)
class Span:
    """A half-open region of a source file: (line, col) inclusive to (end_line, end_col) exclusive.

    Lines and columns are 1-based. Spans never take part in AST equality (see `syntax.ast`).
    """

    source: SourceFile | None
    line: int
    col: int
    end_line: int
    end_col: int

    @property
    def path(self) -> str:
        return self.source.path if self.source else "<unknown>"

    def to(self, other: "Span") -> "Span":
        """The span from the start of this one to the end of `other`."""
        return Span(self.source, self.line, self.col, other.end_line, other.end_col)

    def __str__(self) -> str:
        return f"{self.path}:{self.line}:{self.col}"


NO_SPAN = Span(None, 0, 0, 0, 0)
