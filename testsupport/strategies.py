"""Hypothesis strategies: random expression trees of the shapes the parser produces."""

from __future__ import annotations

from hypothesis import strategies as st

from refinterp.syntax import ast

# Plain names plus words that are keywords elsewhere but names in operand position.
NAMES = st.sampled_from(["a", "b", "x", "y_1", "_t", "is", "in", "shape", "then"])
BINARY_OPS = st.sampled_from(
    ["=>", "&&", "||", "^", "<", "<=", ">", ">=", "==", "!=", "is", "in", "<<", ">>", "+", "-",
     "*", "/", "%", "\\", "**", "??"])
FOLD_OPS = st.sampled_from(
    ["+", "*", "&&", "||", "<", "<=", ">", ">=", "==", "!=", ":=", "<<", ">>"])
CUMULATIVE_OPS = st.sampled_from(["+", "*", "&&", "||", "<<", ">>"])

leaves = st.one_of(
    NAMES.map(ast.Name),
    st.integers(0, 10**20).map(ast.IntLiteral),
    st.floats(0, 1e30, allow_nan=False, allow_infinity=False).map(ast.RealLiteral),
    st.booleans().map(ast.BoolLiteral),
    st.sampled_from(["inf", "pi"]).map(ast.Constant),
    st.text(st.characters(codec="ascii", exclude_categories=["Cc"]), max_size=8).map(
        lambda s: ast.StringLiteral((s,) if s else ())),
)


def _optional(strategy):
    return st.none() | strategy


def _extend(children):
    names = NAMES.map(ast.Name)
    subscript = st.builds(
        ast.Subscript, names | children.map(lambda e: ast.Member(ast.Name("x"), "shape")),
        st.lists(children | st.builds(ast.Slice, _optional(children), _optional(children),
                                      _optional(children)) |
                 st.builds(ast.Bounded, children) |
                 st.builds(ast.Bounded, children, children, children) |
                 children.map(ast.Expand), max_size=3).map(tuple),
        st.booleans()).map(lambda s: s if s.items else ast.Subscript(s.base, ()))
    items = st.lists(children | st.builds(ast.Expand, children, _optional(children)) |
                     st.builds(ast.Range, children, children, _optional(children)) |
                     st.lists(children, min_size=2, max_size=3).map(
                         lambda xs: ast.Expand(ast.Zip(tuple(xs)))), max_size=4).map(tuple)
    calls = st.builds(
        ast.Call, st.sampled_from([("f",), ("nn", "conv"), ("int",)]),
        st.lists(children | st.just(ast.Placeholder()), max_size=3).map(tuple),
        st.lists(st.sampled_from(["real", "T"]).map(ast.TypeArg), max_size=2).map(tuple),
        _optional(st.lists(st.builds(ast.AttributeValue, st.sampled_from(["k", "axis"]),
                                     children), max_size=2).map(tuple)))
    formatted = st.lists(st.sampled_from(["v = ", "{", "}", "\\", '"', "'"]) | children.filter(
        lambda e: "StringLiteral" not in repr(e) and "Call" not in repr(e)), min_size=1,
        max_size=3).map(_merge_string_parts)
    return st.one_of(
        st.builds(ast.Unary, st.sampled_from(["+", "-", "!", "?"]), children),
        st.builds(ast.Binary, BINARY_OPS, children, children),
        st.builds(ast.Select, children, children, _optional(children)),
        st.builds(ast.Fold, FOLD_OPS, children, st.just(False)),
        st.builds(ast.Fold, CUMULATIVE_OPS, children, st.just(True)),
        subscript,
        st.builds(ast.Substitute, subscript, children),
        st.builds(ast.Member, names, st.sampled_from(["shape", "rank", "size"])),
        st.builds(ast.ListExpr, items),
        st.builds(ast.Builtin, st.sampled_from(["sqrt", "abs"]), children.map(lambda e: (e,))),
        calls,
        formatted,
    )


def _merge_string_parts(parts: list) -> ast.StringLiteral:
    merged: list = []
    for part in parts:
        if isinstance(part, str) and merged and isinstance(merged[-1], str):
            merged[-1] += part
        else:
            merged.append(part)
    return ast.StringLiteral(tuple(merged))


expressions = st.recursive(leaves, _extend, max_leaves=12)
