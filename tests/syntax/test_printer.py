"""Canonical printer: parse(print(tree)) == tree."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings

from refinterp.core.files import read_source
from refinterp.core.diagnostics import Diagnostic
from refinterp.core.source import SourceFile
from refinterp.syntax import ast, parse_expression, parse_module
from refinterp.syntax.expressions import ExpressionParser
from refinterp.syntax.printer import format_expr, format_module, same_tree
from testsupport.paths import REPO_ROOT

from testsupport.strategies import expressions

CORPUS = REPO_ROOT / "spec_tests" / "corpus"
CORPUS_FILES = sorted(CORPUS.glob("*.sknd"))


@settings(max_examples=400, deadline=None)
@given(expressions)
def test_expression_round_trip(tree) -> None:
    text = format_expr(tree)
    assert parse_expression(SourceFile("printed", text)) == tree, text


@pytest.mark.parametrize("path", CORPUS_FILES, ids=lambda p: p.name)
def test_corpus_round_trip_and_idempotence(path: Path) -> None:
    tree = parse_module(read_source(path)).module
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


# ----------------------------------------------------------------------------- printer robustness


def reprinted(text: str) -> str:
    """The canonical text of an expression, checked to read back as the same tree."""
    tree = parse_expression(SourceFile("<t>", text))
    printed = format_expr(tree)
    assert same_tree(parse_expression(SourceFile("<printed>", printed)), tree), printed
    return printed


@pytest.mark.parametrize("text, printed", [
    ("!!!x", "!!!x"), ("- -x", "--x"), ("-!+x", "-!+x"), ("? ?x", "? ?x"), ("?!?x", "?!?x"),
    ("!(!(x))", "!!x"), ("-(a ** b)", "-a ** b"), ("(-a) ** b", "(-a) ** b"),
])
def test_unary_chains_print_without_parentheses(text: str, printed: str) -> None:
    """`!!!x` printed as `!(!(!x))`, doubling the nesting, so deep chains did not parse back;
    `? ?x` must keep its space (`??x` is a coalescing)."""
    assert reprinted(text) == printed


def test_a_long_unary_chain_reads_back() -> None:
    text = "!" * 300 + "x"
    assert reprinted(text) == text


@pytest.mark.parametrize("text", [
    " + ".join(["1"] * 700),
    " ** ".join(["2"] * 700),
    " && ".join(["a"] * 700),
    "x" + " + .." * 700,
    "x" + "[0]" * 700,
    "x" + "[1:, ::-1]" * 700,
    "x" + ".shape[0]" * 700,
    " ?? ".join(["a"] * 300),
    " : ".join(f"c{i} ? {i}" for i in range(300)) + " : 0",
    "x[0] <- " * 150 + "1",
], ids=lambda text: text[:16])
def test_long_flat_chains_print_without_recursion(text: str) -> None:
    """600+ terms raised RecursionError in the printer (and in `==` on the trees)."""
    assert reprinted(text) == text


def _compare(op: str, left: str, right: ast.Expr) -> ast.Binary:
    return ast.Binary(op, ast.Name(left), right)


_EQUAL = ast.Binary("==", ast.Name("d"), ast.Name("e"))


@pytest.mark.parametrize("tree, printed", [
    (ast.Call(("f",), (_compare("<", "a", ast.Name("b")), _compare(">", "c", _EQUAL))),
     "f(a < b, (c) > (d == e))"),
    (ast.ListExpr((_compare("<", "a", ast.Name("b")), _compare(">", "c", _EQUAL))),
     "[a < b, (c) > (d == e)]"),
    (ast.Binary(">", _compare("<", "a", ast.Name("b")), _EQUAL), "(a < b) > (d == e)"),
    (ast.Binary(">", _compare("<", "a", ast.Name("b")), ast.Name("c")), "a < b > c"),
])
def test_comparisons_never_print_as_generic_arguments(tree: ast.Expr, printed: str) -> None:
    """`c > (d == e)` after `a < b,` read back as the generic call `a<b, c>(d == e)`."""
    assert format_expr(tree) == printed
    assert same_tree(parse_expression(SourceFile("<printed>", printed)), tree)


def test_comparison_chains_are_not_nested_in_parentheses() -> None:
    text = " < ".join(["a"] * 400)
    assert reprinted(text) == text


@pytest.mark.parametrize("text, printed", [
    ("a && b || c", "(a && b) || c"), ("(a || b) && c", "(a || b) && c"),
    ("a || (b && c)", "a || (b && c)"), ("a && b && c || d", "(a && b && c) || d"),
])
def test_mixed_logic_keeps_its_parentheses(text: str, printed: str) -> None:
    """The printer dropped the parentheses that silence the mixed-logic warning."""
    assert reprinted(text) == printed
    parser = ExpressionParser(SourceFile("<printed>", printed))
    parser.parse_item()
    assert parser.warnings == []


def test_a_string_inside_an_insertion_is_single_quoted() -> None:
    """`"{c ? 'a' : 'b'}"` printed its inner strings with double quotes, ending the string."""
    text = '''"the {c ? 'first' : 'it\\'s'} one"'''
    assert reprinted(text) == text


def test_a_comment_inside_an_insertion_is_an_error() -> None:
    """`"{a # b}"` read as `"{a}"`: the comment swallowed the rest of the insertion."""
    with pytest.raises(Diagnostic, match="cannot hold a comment") as caught:
        parse_expression(SourceFile("<t>", '"{a # b}"'))
    assert (caught.value.span.line, caught.value.span.col) == (1, 5)


def test_same_tree_ignores_spans_and_sees_differences() -> None:
    one = parse_expression(SourceFile("<a>", "f(x + 1, [y..])"))
    assert same_tree(one, parse_expression(SourceFile("<b>", " f( x+1 ,[ y .. ] )")))
    assert not same_tree(one, parse_expression(SourceFile("<c>", "f(x + 2, [y..])")))
    assert not same_tree(one, parse_expression(SourceFile("<d>", "f(x + 1, [y])")))
