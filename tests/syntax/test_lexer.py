"""Lexer: tokens, literals and lexical errors (spec §2.4 literals and identifiers)."""

from __future__ import annotations

import pytest

from refinterp.core.diagnostics import SyntaxDiagnostic
from refinterp.core.source import SourceFile
from refinterp.syntax.lexer import tokenize


def kinds(text: str) -> list[tuple[str, str]]:
    return [(t.kind, t.text) for t in tokenize(SourceFile("t", text))][:-1]


def test_numbers_follow_spec_2_4() -> None:
    # "Integer literals consist of digits only"; "Real literals contain a decimal ., or are
    # written in scientific notation, e.g. 1.23 or 1e-5."
    assert kinds("123 1.23 1e-5 2.5E+3 1.") == [
        ("int", "123"), ("real", "1.23"), ("real", "1e-5"), ("real", "2.5E+3"), ("real", "1.")]


def test_integer_before_dots_stays_integer() -> None:
    # §2.4 warns that `1..` could be mistaken for a real; refinterp lexes `1..(5)` as 1 and `..`.
    assert kinds("1..(5)") == [("int", "1"), ("op", ".."), ("op", "("), ("int", "5"),
                               ("op", ")")]
    assert kinds("x...") == [("name", "x"), ("op", "...")]


def test_maximal_munch_operators() -> None:
    assert [t for _, t in kinds("<?= >?= <? >? << >> <= >= <> <- -> => ?? ** := ...")] == [
        "<?=", ">?=", "<?", ">?", "<<", ">>", "<=", ">=", "<>", "<-", "->", "=>", "??", "**",
        ":=", "..."]
    # `::` is two colons (a slice with an omitted stop, as in c[0::2]).
    assert [t for _, t in kinds("::")] == [":", ":"]


def test_comments_strings_builtins_blocks() -> None:
    assert kinds('# a comment\n"a" \'b\' `sqrt` @lower') == [
        ("string", '"a"'), ("string", "'b'"), ("builtin", "`sqrt`"), ("block", "@lower")]


def test_offsets_are_exact() -> None:
    source = SourceFile("t", "a\n  bc")
    token = tokenize(source)[1]
    assert source.position(token.start) == (2, 3)


@pytest.mark.parametrize("text, line, col, message", [
    ('x = "abc', 1, 5, "unterminated string"),
    ("x $ y", 1, 3, "unexpected character '$'"),
    ("a\n  `sqrt", 2, 3, "built-in"),
    ("@ input", 1, 1, "block name"),
])
def test_lexical_errors_point_at_the_character(text: str, line: int, col: int,
                                                message: str) -> None:
    with pytest.raises(SyntaxDiagnostic) as info:
        tokenize(SourceFile("t", text))
    assert (info.value.span.line, info.value.span.col) == (line, col)
    assert message in info.value.message
