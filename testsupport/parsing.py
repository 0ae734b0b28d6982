"""Parsing helpers shared by the syntax tests: module text, one expression, one block, the
diagnostic a text raises."""

from __future__ import annotations

import pytest

from refinterp.core.diagnostics import Diagnostic
from refinterp.core.source import SourceFile
from refinterp.syntax import ast, parse_expression, parse_module


def parse_text(text: str, path: str = "test.sknd") -> ast.Module:
    """Parse module text (raising the diagnostic on error)."""
    return parse_module(SourceFile(path, text)).module


def expr(text: str) -> ast.Expr:
    """Parse one expression."""
    return parse_expression(SourceFile("expr", text))


def wrap(block: str, body: str) -> str:
    """A module with one operator holding one block."""
    return f"operator op {{\n    @{block} {{\n{body}\n    }}\n}}\n"


def entries(block: str, body: str) -> tuple:
    """The entries of one block of a wrapped operator."""
    module = parse_text(wrap(block, body))
    return module.definitions[0].blocks[0].entries


def error_of(text: str, path: str = "test.sknd") -> Diagnostic:
    """The diagnostic that parsing `text` raises."""
    with pytest.raises(Diagnostic) as info:
        parse_module(SourceFile(path, text))
    return info.value
