"""Ring 1, text → syntax tree: lexer, AST (frozen dataclasses with spans, and the expression
visitor base), parser for both dialects, canonical printer.

May import: `refinterp.core`."""

from refinterp.syntax.parser import ParseResult, parse_expression, parse_module

__all__ = ["ParseResult", "parse_expression", "parse_module"]
