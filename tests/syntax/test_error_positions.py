"""Syntax errors point at the exact line and column."""

from __future__ import annotations

import pytest

from testsupport.parsing import error_of

CASES = [
    # A missing `}`: reported where the block should have been closed.
    ("operator a {\n    @input {\n        x: real[n];\n\n    @output { y: real[n]; }\n}\n",
     5, 5, "expected '}' to close the @input block"),
    # A missing `}` at the end of the file.
    ("operator a {\n    @input {\n        x: real[n];\n    }\n", 4, 6, "expected a block"),
    ("operator a {\n    @foo { }\n}\n", 2, 5, "unknown block '@foo'"),
    ("operator a {\n    @using { x = (1 + 2)); }\n}\n", 2, 25, "found ')'"),
    ("operator a {\n    @assert { x > 0: \"abc; }\n}\n", 2, 22, "unterminated string"),
    ("operator a {\n    @using { x = [1 ..5]; }\n}\n", 2, 23, "must be in parentheses"),
    ("operator a {\n  @lower {\n    y[i] = x[i], i > n;\n  }\n}\n", 3, 20, "expected '<'"),
    ("operator a {\n  @compose {\n    y = if c then f(x);\n  }\n}\n", 3, 23, "'else'"),
    ("operator a {\n  @compose {\n    y = { z = f(x); };\n  }\n}\n", 3, 21, "'yield'"),
    ("import ;\n", 1, 8, "expected a module name"),
    # A ';' forgotten at the end of a line is reported just past that line's last token.
    ("operator a {\n  @input {\n    B: real[k,n]\n  }\n}\n", 3, 17, "expected ';'"),
    ("operator a {\n  @input { x: real[n; }\n}\n", 2, 21, "expected ',' or ']'"),
    ("graph\n", 1, 6, "expected a name"),  # just past the last token
    ("operator a {\n  @assert { x: \"{\"; }\n}\n", 2, 17, "unclosed '{'"),
    ("operator a {\n  @assert { x: \"{1 +}\"; }\n}\n", 2, 21, "found end of the '{...}' insertion"),
    ("operator a {\n  @assert { x: \"a\\qb\"; }\n}\n", 2, 18, "unknown escape"),
]


@pytest.mark.parametrize("text, line, col, message", CASES)
def test_error_position(text: str, line: int, col: int, message: str) -> None:
    diag = error_of(text)
    assert message in diag.message
    assert (diag.span.line, diag.span.col) == (line, col), diag.message


def test_rendering_has_location_source_line_and_caret() -> None:
    rendered = str(error_of("operator a {\n    @foo { }\n}\n", path="m.sknd"))
    lines = rendered.splitlines()
    assert lines[0] == "m.sknd:2:5: error: unknown block '@foo' [E0100]"
    assert lines[1] == "    2 |     @foo { }"
    assert lines[2] == "      |     ^^^^"
