"""Spec §2.6 affine extents and §2.6.1 binding order of input shapes."""

from __future__ import annotations

from fractions import Fraction

import pytest

from refinterp.language.binding import (
    Affine, BindingDiagnostic, affine_form, binding_order, check_deferred_attributes,
    initially_known, solve_affine,
)
from refinterp.core.source import SourceFile
from refinterp.syntax import parse_expression, parse_module


def e(text: str):
    return parse_expression(SourceFile("<t>", text))


def blocks(body: str) -> dict:
    module = parse_module(SourceFile("<t>", f"operator f {{ {body} }}")).module
    return {b.kind: b.entries for b in module.definitions[0].blocks}


@pytest.mark.parametrize("text, symbol, a, b", [
    ("m", "m", 1, 0), ("k + 1", "k", 1, 1), ("2 * d", "d", 2, 0), ("3 - x", "x", -1, 3),
    ("(s + 1) * 2", "s", 2, 2), ("-x", "x", -1, 0),
])
def test_affine_forms(text: str, symbol: str, a: int, b: int) -> None:
    # §2.6: "an expression in the form a * x + b (or an equivalent one)".
    assert affine_form(e(text)) == Affine(symbol, Fraction(a), Fraction(b))


@pytest.mark.parametrize("text", ["n / 2", "x * y", "x + y", "3", "x - x", "a ? b : c"])
def test_not_affine(text: str) -> None:
    assert affine_form(e(text)) is None


def test_solving_affine_extents() -> None:
    # §2.6: `k + 1` bound to 5 gives k = 4; `s..(2 * d)` "prescribes that the rank of s must be
    # even": rank 6 gives d = 3, rank 5 has no solution.
    assert solve_affine(affine_form(e("k + 1")), 5) == 4
    assert solve_affine(affine_form(e("2 * d")), 6) == 3
    assert solve_affine(affine_form(e("2 * d")), 5) is None


def test_section_2_6_1_example_binds_y_first() -> None:
    # §2.6.1: attributes r, a, b, c; inputs x: real[s..(r),z..(d),t..], y: real[s..(r),z..(d)].
    # "So input y will be the first in the binding order ... input x ... takes the second".
    b = blocks("@attrib { r: int; a: optional int; b: int..(d) = 0; c: int = 2 * d + r; } "
               "@input { x: real[s..(r),z..(d),t..]; y: real[s..(r),z..(d)]; }")
    assert initially_known(b["attrib"]) == {"r"}
    assert [i.name for i in binding_order(b["attrib"], b["input"])] == ["y", "x"]
    check_deferred_attributes(b["attrib"], b["input"])  # c = 2 * d + r is computable


def test_attribute_rank_disambiguates() -> None:
    b = blocks("@attrib { r: int; } @input { x: real[s..(r),t..]; }")
    assert [i.name for i in binding_order(b["attrib"], b["input"])] == ["x"]


def test_ambiguous_input_is_an_invalid_definition() -> None:
    # §2.6.1: `x: real[s..,t..]` cannot be split; nor can a packed attribute's length
    # disambiguate (`a: int..(d) = 0`).
    for body in ["@input { x: real[s..,t..]; }",
                 "@attrib { a: int..(d) = 0; } @input { x: real[s..(d),t..]; }"]:
        b = blocks(body)
        with pytest.raises(BindingDiagnostic, match="input 'x' cannot be bound"):
            binding_order(b.get("attrib", ()), b["input"])


def test_optional_inputs_come_last() -> None:
    b = blocks("@input { bias: optional real[n]; x: real[b, n]; w: real[n, c]; }")
    assert [i.name for i in binding_order((), b["input"])] == ["x", "w", "bias"]


def test_rank_capture_counts_as_known_for_its_own_shape() -> None:
    # The reshape of §4.1.2: `input: T^(input_rank)[s..(axis < 0 ? axis + input_rank : axis),
    # t..(d)]` — the first length uses the captured rank, so only t is flexible.
    b = blocks("@attrib { axis: int = 0; } "
               "@input { input: T^(input_rank)[s..(axis < 0 ? axis + input_rank : axis),t..(d)]; }")
    assert [i.name for i in binding_order(b["attrib"], b["input"])] == ["input"]


def test_deferred_default_must_be_computable() -> None:
    b = blocks("@attrib { a: int.. = [0:q]; } @input { x: real[n]; }")
    with pytest.raises(BindingDiagnostic, match="uses q"):
        check_deferred_attributes(b["attrib"], b["input"])


def test_a_bound_pack_symbol_has_a_known_length() -> None:
    # §4.1.6 scatter_nd: `indices: int[b..(batch_dims),z..,d]` binds z and d first, then data
    # (first pass: data has two flexible items and waits; updates then has only t..), and data
    # in the second pass, when d and t are known.
    b = blocks("@attrib { batch_dims: int = 0; } @input { data: T[b..(batch_dims),s..(d),t..]; "
               "indices: int[b..(batch_dims),z..,d]; updates: T[b..(batch_dims),z..,t..]; }")
    assert [i.name for i in binding_order(b["attrib"], b["input"])] == \
        ["indices", "updates", "data"]
