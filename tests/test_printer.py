"""Canonical printer: parse(print(tree)) == tree."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings

from refinterp.core.source import SourceFile
from refinterp.syntax import parse_expression, parse_module
from refinterp.syntax.printer import format_expr, format_module

from .strategies import expressions

CORPUS = Path(__file__).resolve().parent.parent / "spec_tests" / "corpus"
CORPUS_FILES = sorted(CORPUS.glob("*.sknd"))


@settings(max_examples=400, deadline=None)
@given(expressions)
def test_expression_round_trip(tree) -> None:
    text = format_expr(tree)
    assert parse_expression(SourceFile("printed", text)) == tree, text


@pytest.mark.parametrize("path", CORPUS_FILES, ids=lambda p: p.name)
def test_corpus_round_trip_and_idempotence(path: Path) -> None:
    tree = parse_module(SourceFile.read(path)).module
    text = format_module(tree)
    again = parse_module(SourceFile("printed", text)).module
    assert again == tree
    assert format_module(again) == text


@pytest.mark.parametrize("text", ["s * .. ..", "[s * .. .., 1]"])
def test_a_fold_followed_by_dots_keeps_its_space(text: str) -> None:
    """`s * .. ..` (a fold, then an expansion) printed as `s * ....`, which does not parse back
    (found by the mutation fuzz test)."""
    tree = parse_expression(SourceFile("<t>", text))
    printed = format_expr(tree)
    assert "...." not in printed
    assert parse_expression(SourceFile("<t>", printed)) == tree
