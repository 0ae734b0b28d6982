"""Ring 1, text → syntax tree and back: the lexer (`lexer`), the parser for both dialects
(`cursor`, `expressions`, `parser`), the AST (`ast`: frozen dataclasses with spans), the
expression visitor base and tree walks (`visitor`), the canonical printer (`printer`) and
trees as plain data for the parse cache (`serial`).

May import: `refinterp.core`."""

from __future__ import annotations

from typing import Any

__all__ = ["ParseResult", "parse_expression", "parse_module"]


def __getattr__(name: str) -> Any:
    """The parser's entry points, imported on first use, so that `import refinterp.syntax.ast`
    alone does not load the lexer and the parser (start-up time)."""
    if name in __all__:
        from refinterp.syntax import parser

        value = getattr(parser, name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
