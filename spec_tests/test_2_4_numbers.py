"""Numeric rules (refinterp/semantics.py) under the `spec` and `khronos` profiles.

Spec §2.4 "Unary and binary operators", "Casting", "Built-in functions"; expected values are
derived by hand or with Python's math module written here, never by the code under test.
"""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from refinterp.semantics import (
    INT_NEG_INF, INT_POS_INF, KHRONOS, SPEC, NumericError, binary, builtin, cast, default_value,
)


@pytest.mark.parametrize("a, b, floor_q, ceil_q, mod", [
    (7, 2, 3, 4, 1), (-7, 2, -4, -3, 1), (7, -2, -4, -3, -1), (-7, -2, 3, 4, -1), (6, 3, 2, 2, 0),
])
def test_spec_profile_division_rounds_down_and_up(a, b, floor_q, ceil_q, mod) -> None:
    # §2.4: "operator \ means division with rounding upwards ... (whereas the regular operator /
    # rounds downwards)"; `%` consistent with `/` (floored: the sign of the divisor).
    assert binary("/", a, b, SPEC) == floor_q
    assert binary("\\", a, b, SPEC) == ceil_q
    assert binary("%", a, b, SPEC) == mod


@pytest.mark.parametrize("a, b, trunc_q, away_q, mod", [
    (7, 2, 3, 4, 1), (-7, 2, -3, -4, -1), (7, -2, -3, -4, 1), (-7, -2, 3, 4, -1), (6, 3, 2, 2, 0),
])
def test_khronos_profile_division_truncates_like_c(a, b, trunc_q, away_q, mod) -> None:
    assert binary("/", a, b, KHRONOS) == trunc_q
    assert binary("\\", a, b, KHRONOS) == away_q
    assert binary("%", a, b, KHRONOS) == mod


@given(st.integers(-10**6, 10**6), st.integers(-1000, 1000).filter(bool))
def test_division_and_modulo_are_consistent(a: int, b: int) -> None:
    q, r = binary("/", a, b, SPEC), binary("%", a, b, SPEC)
    assert a == b * q + r and (r == 0 or (r > 0) == (b > 0)) and abs(r) < abs(b)
    q, r = binary("/", a, b, KHRONOS), binary("%", a, b, KHRONOS)
    assert a == b * q + r and (r == 0 or (r > 0) == (a > 0)) and abs(r) < abs(b)
    assert binary("\\", a, b, SPEC) == -((-a) // b)


@pytest.mark.parametrize("op", ["/", "%", "\\"])
@pytest.mark.parametrize("profile", [SPEC, KHRONOS])
def test_integer_division_by_zero_is_an_error(op, profile) -> None:
    with pytest.raises(NumericError, match="by zero"):
        binary(op, 1, 0, profile)


def test_integers_are_unbounded_and_powers_exact() -> None:
    # §2.3: "int is understood as a mathematical (signed) integer number".
    assert binary("**", 2, 100) == 1267650600228229401496703205376
    assert binary("*", 10**30, 10**30) == 10**60
    with pytest.raises(NumericError, match="negative exponent"):  # decision
        binary("**", 2, -1)


def test_real_division_and_modulo() -> None:
    assert binary("/", 1.0, 0.0) == math.inf and binary("/", -1.0, 0.0) == -math.inf
    assert math.isnan(binary("/", 0.0, 0.0))
    assert binary("%", -7.5, 2.0, SPEC) == 0.5  # -7.5 - 2 * floor(-3.75) = 0.5
    assert binary("%", -7.5, 2.0, KHRONOS) == math.fmod(-7.5, 2.0) == -1.5
    assert binary("\\", 7.0, 2.0, SPEC) == 4.0 and binary("\\", -7.0, 2.0, SPEC) == -3.0
    assert binary("\\", -7.0, 2.0, KHRONOS) == -4.0


def test_min_max_and_nan() -> None:
    assert binary("<<", 3, 5) == 3 and binary(">>", 3.0, 5.0) == 5.0
    assert math.isnan(binary("<<", math.nan, 1.0)) and math.isnan(binary(">>", 1.0, math.nan))


def test_casts_truncate_toward_zero() -> None:
    # §2.4 Casting; int(real) truncates toward zero in both profiles.
    assert cast("int", 2.7) == 2 and cast("int", -2.7) == -2
    assert cast("int", True) == 1 and cast("real", 3) == 3.0 and cast("bool", 0.0) is False
    assert cast("int", math.inf) is INT_POS_INF and cast("int", -math.inf) is INT_NEG_INF
    with pytest.raises(NumericError):
        cast("int", math.nan)
    assert default_value("int") == 0 and default_value("str") == ""


def test_int_infinity_orders_beyond_every_int() -> None:
    assert INT_NEG_INF < -10**100 < 10**100 < INT_POS_INF
    assert -INT_POS_INF is INT_NEG_INF and binary("<<", INT_POS_INF, 5) == 5


@pytest.mark.parametrize("x, expected", [(2.5, 3.0), (-2.5, -3.0), (0.5, 1.0), (-0.4, -0.0),
                                         (1.4999, 1.0)])
def test_round_half_away_from_zero(x, expected) -> None:
    assert builtin("round", x, SPEC) == expected == builtin("round", x, KHRONOS)


def test_frac_of_negative_numbers() -> None:
    # Decision: spec frac(x) = x - floor(x) ∈ [0, 1); khronos: x - trunc(x) (C modf).
    assert builtin("frac", -1.25, SPEC) == 0.75
    assert builtin("frac", -1.25, KHRONOS) == math.modf(-1.25)[0] == -0.25


def test_sign_abs_keep_their_type() -> None:
    assert builtin("sign", -3) == -1 and builtin("sign", 0) == 0 and builtin("abs", -3) == 3
    assert builtin("sign", -0.0) == 0.0 and builtin("sign", 2.0) == 1.0


def test_domain_errors_follow_ieee() -> None:
    # Decision: outside the domain the real result is nan, at a pole ±inf.
    assert math.isnan(builtin("sqrt", -1.0)) and math.isnan(builtin("asin", 2.0))
    assert builtin("log", 0.0) == -math.inf and math.isnan(builtin("log", -1.0))
    assert math.isnan(builtin("acosh", 0.5)) and builtin("atanh", 1.0) == math.inf
    assert builtin("exp", 1000.0) == math.inf


def test_mixed_types_are_rejected() -> None:
    with pytest.raises(NumericError):
        binary("+", 1, 1.0)
    with pytest.raises(NumericError):
        builtin("sqrt", 4)


def test_limits_are_diagnostics() -> None:
    with pytest.raises(NumericError, match="limit"):
        binary("**", 2, 10**8)
    assert binary("**", 2, 1000) == 1 << 1000
