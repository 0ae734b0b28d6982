"""SkriptND syntax: lexer, AST, parser and canonical printer."""

from .parser import ParseResult, parse_expression, parse_module

__all__ = ["ParseResult", "parse_expression", "parse_module"]
