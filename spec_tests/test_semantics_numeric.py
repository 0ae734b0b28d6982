"""Numeric rules of refinterp/semantics.py under the `spec` and `khronos` profiles.

One test per rule of docs/semantics.md ("## Numbers"), each citing the spec paragraph (draft spec
§2.3 "Type system", §2.4 "Unary and binary operators", "Casting", "Built-in functions", §4.2 math
operators) or the Khronos runtime code it checks. Expected values are written by hand or computed
here with independent plain Python (fractions, decimal, math) or NumPy — never by calling the
function under test to make the expectation.

Khronos runtime references (KhronosGroup/NNEF-Tools, skriptnd-pyproject): the code generator
`skriptnd/execution.py` emits C++ `/` and `%` for ints, `std::fmod` for real `%`, `std::pow` for
`**`, `std::min`/`std::max` for `<?`/`>?`, `sknd::rt::ceil_div` for `\\`; `runtime.h` defines
`ceil_div(int x, int y) = x < 0 ? (x - (|y|-1)) / y : (x + (|y|-1)) / y`,
`ceil_div(real x, real y) = std::ceil(x / y)`, `sign` and `frac` (= `std::modf`).
"""

from __future__ import annotations

import copy
import math
import pickle
import re
from decimal import ROUND_HALF_UP, Decimal, localcontext
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from refinterp.numeric.rules import (
    INT_NEG_INF, INT_POS_INF, KHRONOS, PROFILES, SPEC, IntInfinity, NumericError, binary,
    builtin, cast, compare, default_value, unary,
)

BOTH = pytest.mark.parametrize("profile", [SPEC, KHRONOS], ids=["spec", "khronos"])
NAN = math.nan
INF = math.inf


def same_float(actual: object, expected: float) -> bool:
    """Equal as IEEE values, nan equal to nan and the sign of a zero significant."""
    if not isinstance(actual, float):
        return False
    if math.isnan(expected):
        return math.isnan(actual)
    return actual == expected and math.copysign(1.0, actual) == math.copysign(1.0, expected)


def c_trunc_div(a: int, b: int) -> int:
    """C99 integer `/` (truncation toward zero), from exact rational arithmetic."""
    return math.trunc(Fraction(a, b))


def c_mod(a: int, b: int) -> int:
    """C99 integer `%`: a - b * (a / b) with the truncating `/`."""
    return a - b * c_trunc_div(a, b)


def khronos_ceil_div(x: int, y: int) -> int:
    """A transliteration of `sknd::rt::ceil_div(int_t, int_t)` in runtime.h."""
    z = abs(y) - 1
    return c_trunc_div(x - z, y) if x < 0 else c_trunc_div(x + z, y)


def np_real(function, *args: float) -> float:
    """A NumPy float64 ufunc result with IEEE special values and no warnings."""
    with np.errstate(all="ignore"):
        return float(function(*(np.float64(a) for a in args)))


INT_PAIRS = [(7, 2), (-7, 2), (7, -2), (-7, -2), (6, 3), (-6, 3), (0, 5), (0, -5), (1, 1),
             (-1, 3), (5, 7), (-5, 7), (10**30 + 7, 3), (-(10**30) - 7, 10**15 + 1)]
finite_floats = st.floats(allow_nan=False, allow_infinity=False)
nonzero_ints = st.integers().filter(lambda b: b != 0)


# ----------------------------------------------------------------------------- int / \ %


@pytest.mark.parametrize("a, b", INT_PAIRS)
def test_int_division_spec_rounds_down(a: int, b: int) -> None:
    """§2.4 Unary and binary operators: "(whereas the regular operator / rounds downwards)"."""
    assert binary("/", a, b, SPEC) == math.floor(Fraction(a, b))


def test_int_division_spec_and_khronos_examples() -> None:
    """§2.4: `/` rounds downwards (spec); the Khronos runtime emits C `/` (truncation)."""
    assert binary("/", -7, 2, SPEC) == -4 and binary("/", -7, 2, KHRONOS) == -3
    assert binary("/", 7, -2, SPEC) == -4 and binary("/", 7, -2, KHRONOS) == -3
    assert binary("/", 7, 2, SPEC) == 3 == binary("/", 7, 2, KHRONOS)
    assert binary("/", -7, -2, SPEC) == 3 == binary("/", -7, -2, KHRONOS)


@pytest.mark.parametrize("a, b", INT_PAIRS)
def test_int_division_khronos_truncates(a: int, b: int) -> None:
    """Khronos runtime (execution.py emits C++ `/` on int_t): truncation toward zero."""
    assert binary("/", a, b, KHRONOS) == math.trunc(Fraction(a, b))
    if abs(a) < 2**50:  # NumPy's trunc of the exact float quotient, an independent oracle
        assert binary("/", a, b, KHRONOS) == int(np.trunc(np.float64(a) / np.float64(b)))


@pytest.mark.parametrize("a, b", INT_PAIRS)
def test_int_ceil_division_spec_rounds_up(a: int, b: int) -> None:
    """§2.4: "operator \\ means division with rounding upwards for arguments of type int"."""
    assert binary("\\", a, b, SPEC) == math.ceil(Fraction(a, b))


def test_int_ceil_division_examples() -> None:
    """§2.4 `\\` rounds upwards: 7 \\ 2 = 4, -7 \\ 2 = -3 (spec); the Khronos `ceil_div` rounds
    away from zero: -7 \\ 2 = -4, 7 \\ -2 = -4."""
    assert binary("\\", 7, 2, SPEC) == 4 and binary("\\", -7, 2, SPEC) == -3
    assert binary("\\", 7, -2, SPEC) == -3 and binary("\\", -7, -2, SPEC) == 4
    assert binary("\\", 7, 2, KHRONOS) == 4 and binary("\\", -7, 2, KHRONOS) == -4
    assert binary("\\", 7, -2, KHRONOS) == -4 and binary("\\", -7, -2, KHRONOS) == 4
    assert binary("\\", 6, 3, SPEC) == 2 == binary("\\", 6, 3, KHRONOS)
    assert binary("\\", 0, -3, SPEC) == 0 == binary("\\", 0, -3, KHRONOS)


@pytest.mark.parametrize("a, b", INT_PAIRS)
def test_int_ceil_division_khronos_rounds_away_from_zero(a: int, b: int) -> None:
    """Khronos runtime.h `ceil_div(int_t, int_t)`: (x ± (|y| - 1)) / y in C, i.e. the quotient
    rounded away from zero."""
    assert binary("\\", a, b, KHRONOS) == khronos_ceil_div(a, b)
    exact = Fraction(a, b)
    assert binary("\\", a, b, KHRONOS) == (math.ceil(exact) if exact >= 0 else math.floor(exact))


@pytest.mark.parametrize("a, b", INT_PAIRS)
def test_int_modulo_spec_has_the_sign_of_the_divisor(a: int, b: int) -> None:
    """§2.4: "operator % means modulo for arguments of type int", consistent with `/` rounding
    downwards: floored modulo, the sign of the divisor — Python's own int `%`."""
    assert binary("%", a, b, SPEC) == a % b == a - b * math.floor(Fraction(a, b))


@pytest.mark.parametrize("a, b", INT_PAIRS)
def test_int_modulo_khronos_has_the_sign_of_the_dividend(a: int, b: int) -> None:
    """Khronos runtime: C++ `%` on int_t (the sign of the dividend, consistent with C `/`)."""
    assert binary("%", a, b, KHRONOS) == c_mod(a, b)
    if abs(a) < 2**50 and abs(b) < 2**50:
        assert binary("%", a, b, KHRONOS) == int(math.fmod(a, b))  # C fmod: the same rule


def test_int_modulo_examples() -> None:
    """-7 % 2 is 1 (spec: sign of the divisor) and -1 (khronos: sign of the dividend)."""
    assert binary("%", -7, 2, SPEC) == 1 and binary("%", -7, 2, KHRONOS) == -1
    assert binary("%", 7, -2, SPEC) == -1 and binary("%", 7, -2, KHRONOS) == 1
    assert binary("%", -7, -2, SPEC) == -1 == binary("%", -7, -2, KHRONOS)
    assert binary("%", 6, 3, SPEC) == 0 == binary("%", 6, 3, KHRONOS)


@given(st.integers(), nonzero_ints)
def test_division_and_modulo_are_consistent(a: int, b: int) -> None:
    """§2.4: `%` is consistent with `/`: a == b*(a/b) + a%b, |a%b| < |b|; spec: a%b has the
    sign of b (0 <= a%b < b when b > 0); khronos: a%b has the sign of a. Unbounded ints."""
    q, r = binary("/", a, b, SPEC), binary("%", a, b, SPEC)
    assert a == b * q + r and abs(r) < abs(b)
    assert r == 0 or (r > 0) == (b > 0)
    if b > 0:
        assert 0 <= r < b
    q, r = binary("/", a, b, KHRONOS), binary("%", a, b, KHRONOS)
    assert a == b * q + r and abs(r) < abs(b)
    assert r == 0 or (r > 0) == (a > 0)


@given(st.integers(), nonzero_ints)
def test_ceil_division_property(a: int, b: int) -> None:
    """§2.4 `\\` rounds upwards: spec a \\ b = ceil(a/b) = -((-a) // b); khronos: away from zero,
    (the magnitude is ceil(|a|/|b|), the sign that of a/b)."""
    assert binary("\\", a, b, SPEC) == -((-a) // b)
    magnitude = -(-abs(a) // abs(b))
    assert binary("\\", a, b, KHRONOS) == (magnitude if (a < 0) == (b < 0) else -magnitude)


@BOTH
@pytest.mark.parametrize("op", ["/", "\\", "%"])
@pytest.mark.parametrize("a", [1, 0, -7, 10**40])
def test_integer_division_by_zero_is_an_error(op: str, a: int, profile) -> None:
    """§2.4 / §2.3 (a mathematical integer has no quotient by 0): `/`, `\\` and `%` by zero are
    an error in both profiles (C leaves it undefined)."""
    with pytest.raises(NumericError, match="by zero"):
        binary(op, a, 0, profile)


# ----------------------------------------------------------------------------- int + - * **


@BOTH
def test_integers_are_unbounded_and_exact(profile) -> None:
    """§2.3: "int is understood as a mathematical (signed) integer number, without any notion of
    representation size" — Python ints; no wrap-around at 32 or 64 bits in either profile."""
    assert binary("*", 2**64, 2**64, profile) == 340282366920938463463374607431768211456
    assert binary("*", 10**30 + 1, 10**30 - 1, profile) == 10**60 - 1
    assert binary("+", 2**63 - 1, 1, profile) == 9223372036854775808
    assert binary("-", -(2**31), 1, profile) == -2147483649


@BOTH
def test_int_power_is_exact(profile) -> None:
    """§2.4: "operator ** means exponentiation for arguments of type int and real"; exact for
    ints (never through a float): 3 ** 40 = 12157665459056928801 (not 1.2157665459056929e19)."""
    assert binary("**", 3, 40, profile) == 12157665459056928801
    assert binary("**", 2, 100, profile) == 1267650600228229401496703205376
    assert binary("**", -2, 3, profile) == -8 and binary("**", -2, 4, profile) == 16
    assert binary("**", 0, 0, profile) == 1 and binary("**", 0, 5, profile) == 0
    assert type(binary("**", 2, 3, profile)) is int


def test_int_power_negative_exponent() -> None:
    """§2.4 `**` on ints with a negative exponent (decision). spec: only an exact int result is
    allowed (1 ** b, (-1) ** b), else an error; khronos: C++ `(int)std::pow(a, b)`, the reciprocal
    truncated toward zero. 0 ** negative is an error in both (division by zero)."""
    with pytest.raises(NumericError, match="no integer value"):
        binary("**", 2, -1, SPEC)
    with pytest.raises(NumericError):
        binary("**", -3, -2, SPEC)
    for profile in (SPEC, KHRONOS):
        assert binary("**", 1, -5, profile) == 1
        assert binary("**", -1, -3, profile) == -1 and binary("**", -1, -2, profile) == 1
        with pytest.raises(NumericError, match="by zero"):
            binary("**", 0, -1, profile)
    assert binary("**", 2, -1, KHRONOS) == math.trunc(math.pow(2, -1)) == 0
    assert binary("**", -2, -1, KHRONOS) == math.trunc(math.pow(-2, -1)) == 0
    assert binary("**", -3, -3, KHRONOS) == 0


def test_int_size_limit_is_an_error() -> None:
    """Limits (decision): a compile-time int beyond 1,000,000 bits is an error, not a hang."""
    with pytest.raises(NumericError, match="limit"):
        binary("**", 2, 10**8)
    with pytest.raises(NumericError, match="limit"):
        binary("*", 1 << 600_000, 1 << 600_000)
    assert binary("**", 2, 1000) == 1 << 1000
    assert binary("*", 1 << 400_000, 1 << 400_000) == 1 << 800_000


# ----------------------------------------------------------------------------- reals


@BOTH
@pytest.mark.parametrize("a, b", [(1.0, 0.0), (-1.0, 0.0), (1.0, -0.0), (-2.5, -0.0),
                                  (0.0, 0.0), (-0.0, 0.0), (NAN, 0.0), (INF, 0.0), (3.0, 2.0)])
def test_real_division_by_zero_is_ieee(a: float, b: float, profile) -> None:
    """§2.4 `/` on reals; division by zero (decision): IEEE 754, as NumPy and the Khronos runtime
    compute it — x / ±0 is ±inf (signs multiply), 0 / 0 and nan / 0 are nan; no error."""
    assert same_float(binary("/", a, b, profile), np_real(np.divide, a, b))
    assert binary("/", 1.0, 0.0, profile) == INF and binary("/", -1.0, 0.0, profile) == -INF
    assert math.isnan(binary("/", 0.0, 0.0, profile))


@BOTH
def test_real_arithmetic_is_ieee_double(profile) -> None:
    """§2.3 "real ... without prescribing any notion of precision": compile-time reals are IEEE
    754 binary64 (Python floats) in both profiles; overflow gives ±inf, inf - inf gives nan."""
    assert binary("+", 0.1, 0.2, profile) == 0.30000000000000004
    assert binary("*", 1e308, 10.0, profile) == INF
    assert math.isnan(binary("-", INF, INF, profile))
    assert binary("-", 0.0, 0.0, profile) == 0.0
    assert type(binary("*", 2.0, 3.0, profile)) is float


REAL_MOD_PAIRS = [(-7.5, 2.0), (7.5, -2.0), (7.5, 2.0), (-7.5, -2.0), (5.75, 0.5), (-0.0, 2.0),
                  (1e-300, -3.0), (3.0, 0.1), (5.0, INF), (-5.0, INF), (2.0, NAN), (NAN, 2.0),
                  (INF, 2.0), (1.0, 0.0), (-1.0, -0.0)]


@pytest.mark.parametrize("a, b", REAL_MOD_PAIRS)
def test_real_modulo_spec_is_floored(a: float, b: float) -> None:
    """`%` on reals (decision: §2.4 lists `%` for int only, §4.2.2 `mod` applies it to `T: num`):
    spec: like int `%`, x - y*floor(x/y) with the sign of y (NumPy `remainder`); x % 0 is nan."""
    assert same_float(binary("%", a, b, SPEC), np_real(np.remainder, a, b))
    assert binary("%", -7.5, 2.0, SPEC) == 0.5  # -7.5 - 2 * floor(-3.75) = -7.5 + 8


@pytest.mark.parametrize("a, b", REAL_MOD_PAIRS)
def test_real_modulo_khronos_is_fmod(a: float, b: float) -> None:
    """Khronos runtime: execution.py emits `std::fmod` for real `%` (the sign of x)."""
    assert same_float(binary("%", a, b, KHRONOS), np_real(np.fmod, a, b))
    assert binary("%", -7.5, 2.0, KHRONOS) == math.fmod(-7.5, 2.0) == -1.5


@given(finite_floats, finite_floats.filter(lambda b: b != 0.0))
def test_real_modulo_property(a: float, b: float) -> None:
    """Real `%`: spec equals NumPy `remainder` (floored), khronos equals C `fmod`, for every
    finite pair."""
    assert same_float(binary("%", a, b, SPEC), np_real(np.remainder, a, b))
    assert same_float(binary("%", a, b, KHRONOS), math.fmod(a, b))


@BOTH
@pytest.mark.parametrize("a, b", [(7.0, 2.0), (-7.0, 2.0), (7.0, -2.0), (-7.0, -2.0), (6.0, 3.0),
                                  (-0.5, 2.0), (1.0, 0.0), (0.0, 0.0), (1e308, 1e-308)])
def test_real_ceil_division_is_ceil_in_both_profiles(a: float, b: float, profile) -> None:
    """`\\` on reals (decision: §2.4 lists it for int only): ceil(x / y) in both profiles —
    runtime.h `ceil_div(real_t, real_t)` is `std::ceil(x / y)` (unlike its int overload)."""
    assert same_float(binary("\\", a, b, profile), np_real(lambda x, y: np.ceil(x / y), a, b))
    assert binary("\\", -7.0, 2.0, profile) == -3.0 and binary("\\", 7.0, 2.0, profile) == 4.0


@BOTH
@pytest.mark.parametrize("a, b", [(2.0, 0.5), (2.0, 10.0), (-8.0, 1.0 / 3.0), (0.0, -1.0),
                                  (-0.0, -1.0), (-0.0, -2.0), (10.0, 400.0), (-10.0, 401.0),
                                  (NAN, 0.0), (1.0, NAN), (-2.0, 3.0), (0.5, -INF)])
def test_real_power_is_ieee_pow(a: float, b: float, profile) -> None:
    """§2.4 `**` on reals: C / IEEE `pow` (the Khronos runtime emits `std::pow`): a negative base
    with a fractional exponent is nan, 0 ** -1 is inf, overflow is ±inf, nan ** 0 is 1."""
    assert same_float(binary("**", a, b, profile), np_real(np.power, a, b))
    assert binary("**", 0.0, -1.0, profile) == INF and math.isnan(binary("**", -8.0, 1 / 3))


# ----------------------------------------------------------------------------- min / max


@BOTH
def test_min_max_operators(profile) -> None:
    """§2.4: "operators << and >> mean minimum and maximum of arguments, respectively, for
    arguments of type int and real (same type for both arguments)"; `<?` `>?` are the Khronos
    spellings of the same operators."""
    assert binary("<<", 3, 5, profile) == 3 and binary(">>", 3, 5, profile) == 5
    assert binary("<<", -2.5, 1.0, profile) == -2.5 and binary(">>", -2.5, 1.0, profile) == 1.0
    assert binary("<?", 3, 5, profile) == 3 and binary(">?", 3, 5, profile) == 5
    assert binary("<<", 10**40, -(10**40), profile) == -(10**40)
    for a, b in [(1, 2.0), (True, False), ("a", "b")][0 if profile is SPEC else 1:]:
        with pytest.raises(NumericError):
            binary("<<", a, b, profile)


def test_min_max_nan_spec_propagates() -> None:
    """`<<` / `>>` with a NaN operand (decision, §2.4 silent): spec: NaN in either position
    (like NumPy `minimum` / `maximum`, so the tensor engines agree)."""
    for a, b in [(NAN, 1.0), (1.0, NAN), (NAN, NAN)]:
        assert math.isnan(binary("<<", a, b, SPEC))
        assert math.isnan(binary(">>", a, b, SPEC))
        assert math.isnan(np_real(np.minimum, a, b)) and math.isnan(np_real(np.maximum, a, b))


def test_min_max_nan_khronos_is_std_min_max() -> None:
    """Khronos: execution.py emits `std::min(a, b)` = `b < a ? b : a` and `std::max(a, b)` =
    `a < b ? b : a`, so with a NaN operand the left operand is the result."""
    def std_min(a: float, b: float) -> float:
        return b if b < a else a

    def std_max(a: float, b: float) -> float:
        return b if a < b else a

    for a, b in [(NAN, 1.0), (1.0, NAN), (NAN, NAN), (2.0, 1.0)]:
        assert same_float(binary("<<", a, b, KHRONOS), std_min(a, b))
        assert same_float(binary(">>", a, b, KHRONOS), std_max(a, b))
    assert binary("<<", 1.0, NAN, KHRONOS) == 1.0 and math.isnan(binary("<<", NAN, 1.0, KHRONOS))


# ----------------------------------------------------------------------------- comparisons, logic


@BOTH
def test_comparisons_of_one_type(profile) -> None:
    """§2.4: "comparison operators <, <=, >, >=, ==, != for arguments of any type (same type for
    both arguments)": ints exactly, reals by IEEE (nan unordered, -0.0 == 0.0), false < true,
    strings lexicographically by code point."""
    table = [
        (3, 10**30, (True, True, False, False, False, True)),
        (2.5, 2.5, (False, True, False, True, True, False)),
        (-0.0, 0.0, (False, True, False, True, True, False)),
        (NAN, NAN, (False, False, False, False, False, True)),
        (NAN, 1.0, (False, False, False, False, False, True)),
        (False, True, (True, True, False, False, False, True)),
        ("abc", "abd", (True, True, False, False, False, True)),
        ("B", "a", (True, True, False, False, False, True)),  # 'B' = 66 < 'a' = 97
        ("", "", (False, True, False, True, True, False)),
    ]
    for a, b, expected in table:
        got = tuple(binary(op, a, b, profile) for op in ("<", "<=", ">", ">=", "==", "!="))
        assert got == expected, (a, b)
        assert got == tuple(compare(op, a, b) for op in ("<", "<=", ">", ">=", "==", "!="))


@BOTH
def test_mixed_types_are_rejected(profile) -> None:
    """§2.4: arithmetic and comparisons need "the same type for both arguments": int and real
    are never mixed implicitly (the khronos profile promotes int to real instead, see
    `test_mixed_int_real_is_promoted_only_by_the_khronos_profile`), bools are not ints, strings
    have no arithmetic."""
    mixed = [("+", 1, 1.0), ("==", 1, 1.0), ("<", 1.0, 1), ("<<", 1, 2.0), ("**", 2, 0.5),
             ("==", True, 1), ("!=", 0.5, False)]
    for op, a, b in (mixed if profile is SPEC else []) + [
            ("+", True, 1), ("*", True, True), ("+", "a", "b"), ("&&", 1, 0), ("==", True, "a"),
            ("+", True, 1.0), ("&&", 1, 1.0)]:
        with pytest.raises(NumericError):
            binary(op, a, b, profile)
    with pytest.raises(NumericError):
        binary("@", 1, 2, profile)


@BOTH
def test_logical_operators(profile) -> None:
    """§2.4: "logical operators &&, ||, ^ (xor) and => (implication) for arguments of type
    bool" — truth tables by hand."""
    rows = {  # (a, b): (a && b, a || b, a ^ b, a => b)
        (False, False): (False, False, False, True),
        (False, True): (False, True, True, True),
        (True, False): (False, True, True, False),
        (True, True): (True, True, False, True),
    }
    for (a, b), expected in rows.items():
        got = tuple(binary(op, a, b, profile) for op in ("&&", "||", "^", "=>"))
        assert got == expected and all(type(v) is bool for v in got)


@BOTH
def test_unary_operators(profile) -> None:
    """§2.4: "+ and - for arguments of type int and real", "! for arguments of type bool"."""
    assert unary("-", 5, profile) == -5 and unary("+", -5, profile) == -5
    assert unary("-", 10**40, profile) == -(10**40)
    assert same_float(unary("-", 0.0, profile), -0.0) and unary("-", -INF, profile) == INF
    assert unary("!", True, profile) is False and unary("!", False, profile) is True
    assert unary("-", INT_POS_INF, profile) is INT_NEG_INF
    for op, a in [("-", True), ("!", 1), ("-", "s"), ("~", 1)]:
        with pytest.raises(NumericError):
            unary(op, a, profile)


# ----------------------------------------------------------------------------- casts


@BOTH
@pytest.mark.parametrize("x", [2.7, -2.7, 0.5, -0.5, -0.0, 1e20, -1e300, 2.0**53 + 2,
                               4503599627370497.0, 0.49999999999999994])
def test_cast_int_truncates_toward_zero(x: float, profile) -> None:
    """§2.4 Casting: `int(x)` of a real truncates toward zero, exactly (a mathematical integer)."""
    result = cast("int", x, profile)
    assert type(result) is int and result == math.trunc(x) == int(Fraction(x))


@given(finite_floats)
def test_cast_int_truncates_property(x: float) -> None:
    """§2.4 Casting: int(real) = trunc(x) for every finite float, in both profiles."""
    assert cast("int", x, SPEC) == math.trunc(x) == cast("int", x, KHRONOS)


@BOTH
def test_cast_int_of_infinity_and_nan(profile) -> None:
    """§2.4 Casting: "casting inf or -inf to int type, that is int(inf) and int(-inf) ... denote
    extremal values"; int(nan) has no value: an error."""
    assert cast("int", INF, profile) is INT_POS_INF
    assert cast("int", -INF, profile) is INT_NEG_INF
    with pytest.raises(NumericError, match="nan"):
        cast("int", NAN, profile)


def test_int_infinity_sentinel() -> None:
    """§2.4 Casting: int(±inf) are the extreme integers — beyond every int, equal to themselves,
    negatable, usable in minimum / maximum, printed `int(inf)` / `int(-inf)`; any other arithmetic
    on them is an error (decision: they only mark extremes)."""
    huge = 10**1000
    assert INT_NEG_INF < -huge < 0 < huge < INT_POS_INF
    assert INT_POS_INF > huge and -huge > INT_NEG_INF and INT_POS_INF >= INT_POS_INF
    assert INT_POS_INF == INT_POS_INF and INT_POS_INF != INT_NEG_INF and INT_POS_INF != huge
    assert INT_NEG_INF < INT_POS_INF and not INT_POS_INF < INT_POS_INF
    assert -INT_POS_INF is INT_NEG_INF and -INT_NEG_INF is INT_POS_INF
    assert +INT_NEG_INF is INT_NEG_INF and IntInfinity(5) is INT_POS_INF
    assert min(7, INT_POS_INF) == 7 and max(7, INT_NEG_INF) == 7 and max(7, INT_POS_INF) is \
        INT_POS_INF
    assert sorted([3, INT_POS_INF, -2, INT_NEG_INF]) == [INT_NEG_INF, -2, 3, INT_POS_INF]
    assert repr(INT_POS_INF) == "int(inf)" and str(INT_NEG_INF) == "int(-inf)"
    assert INT_POS_INF.sign == 1 and INT_NEG_INF.sign == -1
    assert hash(INT_POS_INF) == hash(IntInfinity(1)) and len({INT_POS_INF, INT_NEG_INF}) == 2
    assert pickle.loads(pickle.dumps(INT_POS_INF)) is INT_POS_INF
    assert copy.deepcopy(INT_NEG_INF) is INT_NEG_INF
    for profile in (SPEC, KHRONOS):  # through the operator functions
        assert binary("<<", INT_POS_INF, 5, profile) == 5
        assert binary(">>", INT_NEG_INF, -5, profile) == -5
        assert binary(">>", 5, INT_POS_INF, profile) is INT_POS_INF
        assert binary("<", 10**100, INT_POS_INF, profile) is True
        assert binary("==", INT_NEG_INF, INT_NEG_INF, profile) is True
        assert builtin("abs", INT_NEG_INF, profile) is INT_POS_INF
        assert builtin("sign", INT_NEG_INF, profile) == -1
        assert cast("real", INT_NEG_INF, profile) == -INF and cast("bool", INT_POS_INF) is True
        assert cast("int", INT_POS_INF, profile) is INT_POS_INF
        for op in ("+", "-", "*", "/", "\\", "%", "**"):
            with pytest.raises(NumericError, match="int\\(inf\\)"):
                binary(op, INT_POS_INF, 1, profile)
    with pytest.raises(TypeError):
        _ = INT_POS_INF < 1.0  # never mixed with reals (nor bools)


@BOTH
def test_cast_real(profile) -> None:
    """§2.4 Casting: `real(x)` of an int is the nearest double (ties to even, beyond the range
    ±inf); of a bool 0.0 / 1.0."""
    assert cast("real", 3, profile) == 3.0 and type(cast("real", 3, profile)) is float
    assert cast("real", True, profile) == 1.0 and cast("real", False, profile) == 0.0
    assert cast("real", 2**53 + 1, profile) == 9007199254740992.0  # ties to even
    assert cast("real", 10**400, profile) == INF and cast("real", -(10**400), profile) == -INF
    assert same_float(cast("real", -2.5, profile), -2.5)


@BOTH
def test_cast_bool_is_nonzero(profile) -> None:
    """§2.4 Casting: `bool(x)` is x != 0 (so bool(nan) is true, as `(bool)NAN` in C++)."""
    expected = {0: False, -3: True, 10**50: True, 0.0: False, -0.0: False, 0.25: True,
                NAN: True, INF: True}
    for x, value in expected.items():
        assert cast("bool", x, profile) is value, x
    assert cast("int", True, profile) == 1 and type(cast("int", True, profile)) is int
    assert cast("int", False, profile) == 0


@BOTH
def test_cast_to_itself_is_a_no_op(profile) -> None:
    """§2.4 Casting: "Casting the argument type to itself (no-op) is also allowed"."""
    assert cast("int", -7, profile) == -7 and type(cast("int", -7, profile)) is int
    assert same_float(cast("real", -0.0, profile), -0.0)
    assert cast("bool", True, profile) is True and cast("bool", False, profile) is False


@BOTH
def test_strings_cannot_be_cast(profile) -> None:
    """§2.4 Casting: "String type cannot be cast to and from"."""
    for type_name, x in [("int", "1"), ("real", "1.0"), ("bool", ""), ("str", 1), ("str", "s")]:
        with pytest.raises(NumericError, match="string"):
            cast(type_name, x, profile)
    with pytest.raises(NumericError):
        cast("tensor", 1, profile)


def test_default_values() -> None:
    """§2.4: "The default value is 0 and 0.0 for int and real respectively, false for bool and
    "" for str"."""
    assert default_value("int") == 0 and type(default_value("int")) is int
    assert same_float(default_value("real"), 0.0)
    assert default_value("bool") is False and default_value("str") == ""
    with pytest.raises(NumericError):
        default_value("type")


# ----------------------------------------------------------------------------- built-ins


ROUND_CASES = [2.5, -2.5, 0.5, -0.5, 1.5, -1.5, 2.4999, -3.5000001, 0.49999999999999994,
               -0.49999999999999994, 4503599627370497.0, 2.0**60 + 2**8, 1e300, 123.456]


def half_away(x: float) -> float:
    """Round half away from zero with exact decimal arithmetic (decimal's ROUND_HALF_UP rounds
    halves away from zero)."""
    with localcontext() as context:
        context.prec = 400  # enough digits for every finite double
        return float(Decimal(x).quantize(Decimal(1), rounding=ROUND_HALF_UP))


@BOTH
@pytest.mark.parametrize("x", ROUND_CASES)
def test_round_half_away_from_zero(x: float, profile) -> None:
    """§2.4 Built-in functions: `round` takes and gives a real; halves round away from zero in
    both profiles (C `std::round` in the Khronos runtime): round(-2.5) = -3.0."""
    result = builtin("round", x, profile)
    assert type(result) is float and result == half_away(x)
    assert builtin("round", -2.5, profile) == -3.0 and builtin("round", 2.5, profile) == 3.0


@given(finite_floats)
def test_round_property(x: float) -> None:
    """`round` equals exact decimal round-half-away-from-zero for every finite float."""
    assert builtin("round", x) == half_away(x)


@BOTH
def test_round_floor_ceil_special_values(profile) -> None:
    """§2.4 "real arguments and real results": `round`, `floor`, `ceil` give reals, keep the sign
    of a zero result (C: round(-0.4) = -0.0, ceil(-0.5) = -0.0) and return ±inf and nan as is."""
    for name, function in [("round", np.round), ("floor", np.floor), ("ceil", np.ceil)]:
        for x in [INF, -INF, NAN, -0.0, 0.0]:
            assert same_float(builtin(name, x, profile), np_real(function, x))
    assert same_float(builtin("round", -0.4, profile), -0.0)
    assert same_float(builtin("ceil", -0.5, profile), -0.0)


@BOTH
@pytest.mark.parametrize("x", [2.5, -2.5, -0.5, 0.5, 7.0, -7.0, 1e300, -1e-300, 2.0**52 + 0.5])
def test_floor_and_ceil_give_reals(x: float, profile) -> None:
    """§2.4 Built-in functions: `floor` rounds down, `ceil` rounds up; both give reals (§4.2.1
    "Element-wise floor (rounding down)", "ceil (rounding up)")."""
    floor, ceil = builtin("floor", x, profile), builtin("ceil", x, profile)
    assert type(floor) is float and type(ceil) is float
    assert same_float(floor, np_real(np.floor, x)) and same_float(ceil, np_real(np.ceil, x))


@pytest.mark.parametrize("x, expected", [(2.75, 0.75), (-1.25, 0.75), (-0.5, 0.5), (3.0, 0.0),
                                         (INF, NAN), (-INF, NAN), (NAN, NAN)])
def test_frac_spec_is_x_minus_floor(x: float, expected: float) -> None:
    """`frac` of a negative number (decision, §2.4 silent): spec: x - floor(x), in [0, 1)
    (frac(-1.25) = 0.75); frac(±inf) = inf - inf = nan."""
    assert same_float(builtin("frac", x, SPEC), expected)
    if math.isfinite(x):
        assert builtin("frac", x, SPEC) == x - np.floor(x)


@pytest.mark.parametrize("x", [2.75, -1.25, -0.5, 3.0, -3.0, INF, -INF, NAN, 1e-300, -1e300])
def test_frac_khronos_is_modf(x: float) -> None:
    """Khronos runtime.h: `frac(x)` is `std::modf(x, &integral)`: x - trunc(x), with the sign of
    x (frac(-1.25) = -0.25), frac(±inf) = ±0.0."""
    assert same_float(builtin("frac", x, KHRONOS), math.modf(x)[0])
    assert builtin("frac", -1.25, KHRONOS) == -0.25


@BOTH
def test_abs_and_sign_keep_their_type(profile) -> None:
    """§2.4: abs and sign "are supported with both int and real arguments and corresponding
    results"; sign per §4.2.1 "Element-wise sign": x > T(0) ? T(1) : x < T(0) ? T(-1) : T(0), so
    sign(0) = 0, sign(-0.0) = +0.0 and sign(nan) = 0.0 (Khronos `sknd::rt::sign` agrees)."""
    def formula(x):  # the §4.2.1 lowering, transliterated
        one, zero = (1.0, 0.0) if isinstance(x, float) else (1, 0)
        return one if x > zero else -one if x < zero else zero

    for x in [-3, 0, 5, 10**40, -2.5, 0.0, -0.0, 4.0, NAN, INF, -INF]:
        result = builtin("sign", x, profile)
        assert type(result) is type(x)
        assert same_float(result, formula(x)) if isinstance(x, float) else result == formula(x)
    assert builtin("abs", -3, profile) == 3 and type(builtin("abs", -3, profile)) is int
    assert builtin("abs", -(10**40), profile) == 10**40
    assert same_float(builtin("abs", -2.5, profile), 2.5)
    assert same_float(builtin("abs", -0.0, profile), 0.0)  # decision: C fabs clears the sign
    assert math.isnan(builtin("abs", NAN, profile)) and builtin("abs", -INF, profile) == INF


DOMAIN_CASES = [("sqrt", -1.0, np.sqrt), ("log", 0.0, np.log), ("log", -0.0, np.log),
                ("log", -1.0, np.log), ("asin", 2.0, np.arcsin), ("acos", -1.5, np.arccos),
                ("acosh", 0.5, np.arccosh), ("atanh", 1.0, np.arctanh),
                ("atanh", -1.0, np.arctanh), ("atanh", 2.0, np.arctanh), ("exp", 1000.0, np.exp),
                ("sinh", -1000.0, np.sinh), ("cosh", -1000.0, np.cosh), ("sin", INF, np.sin),
                ("cos", -INF, np.cos), ("tan", INF, np.tan), ("log", INF, np.log),
                ("sqrt", NAN, np.sqrt), ("sqrt", -0.0, np.sqrt)]


@BOTH
@pytest.mark.parametrize("name, x, reference", DOMAIN_CASES)
def test_domain_errors_follow_ieee(name: str, x: float, reference, profile) -> None:
    """Real built-ins outside their domain (decision, §2.4 silent): IEEE 754 / C99 Annex F, as
    the tensor engines (NumPy) and the Khronos runtime (`std::` functions) compute them — nan
    (sqrt(-1), log(-1), asin(2), acosh(0.5)), ±inf at a pole (log(0) = -inf, atanh(±1) = ±inf)
    and on overflow (exp(1000) = inf); never an error."""
    assert same_float(builtin(name, x, profile), np_real(reference, x))


def test_domain_error_examples() -> None:
    """The decisions in docs/semantics.md, by hand."""
    assert math.isnan(builtin("sqrt", -1.0)) and math.isnan(builtin("asin", 2.0))
    assert builtin("log", 0.0) == -INF and math.isnan(builtin("log", -1.0))
    assert math.isnan(builtin("acosh", 0.5)) and builtin("atanh", 1.0) == INF
    assert builtin("exp", 1000.0) == INF and builtin("sinh", -1000.0) == -INF


@BOTH
@pytest.mark.parametrize("name", ["sqrt", "exp", "log", "sin", "cos", "tan", "asin", "acos",
                                  "atan", "sinh", "cosh", "tanh", "asinh", "acosh", "atanh",
                                  "erf"])
def test_real_builtins_in_their_domain(name: str, profile) -> None:
    """§2.4 Built-in functions "with real arguments and real results" (plus asin acos atan sinh
    cosh tanh erf of the §4.2.1 operators): the C library function, the same in both profiles."""
    x = 1.5 if name == "acosh" else 0.5
    result = builtin(name, x, profile)
    assert type(result) is float and result == getattr(math, name)(x)
    exact = {"sqrt": (4.0, 2.0), "exp": (0.0, 1.0), "log": (1.0, 0.0), "sin": (0.0, 0.0),
             "cos": (0.0, 1.0), "erf": (0.0, 0.0), "atanh": (0.0, 0.0), "acosh": (1.0, 0.0)}
    if name in exact:
        argument, value = exact[name]
        assert builtin(name, argument, profile) == value


@BOTH
def test_builtins_reject_wrong_types(profile) -> None:
    """§2.4 Built-in functions: sqrt ... frac take reals (an int argument is a type error, there
    is no implicit conversion); abs and sign take int or real; unknown names are errors."""
    for name, x in [("sqrt", 4), ("round", 3), ("frac", True), ("exp", "1"), ("abs", True),
                    ("sign", "x"), ("nosuch", 1.0)]:
        with pytest.raises(NumericError):
            builtin(name, x, profile)


# ----------------------------------------------------------------------------- profiles, docs


def test_profiles_registry() -> None:
    """The profiles of docs/semantics.md: `spec` (the default) and `khronos`, by name."""
    assert PROFILES == {"spec": SPEC, "khronos": KHRONOS}
    assert SPEC.name == "spec" and KHRONOS.name == "khronos"
    assert binary("/", -7, 2) == binary("/", -7, 2, SPEC) == -4  # the default is spec
    differing = {field for field in ("int_division", "int_ceil_division", "real_modulo", "frac",
                                     "min_max_nan", "int_negative_power")
                 if getattr(SPEC, field) != getattr(KHRONOS, field)}
    assert len(differing) == 6


def test_every_numeric_rule_is_documented_and_pinned() -> None:
    """docs/semantics.md "## Numbers": every test named there exists here, and every test here is
    named there (the table is the index of the numeric rules)."""
    docs = (Path(__file__).parents[1] / "docs" / "semantics.md").read_text(encoding="utf-8")
    numbers = docs.split("## Numbers", 1)[1].split("\n## ", 1)[0]
    named = set(re.findall(r"`(test_\w+)`", numbers))
    defined = {name for name in globals() if name.startswith("test_")}
    assert named - defined == set(), "docs name tests that do not exist"
    assert defined - named == set(), "tests missing from docs/semantics.md"


def test_mixed_int_real_is_promoted_only_by_the_khronos_profile() -> None:
    """The Khronos runtime (C++) converts the int operand of a mixed int/real operation to real
    (its stdlib's `math.gt` takes X and Y of different num types); the spec requires one type."""
    from refinterp.numeric.rules import INT_POS_INF, KHRONOS, SPEC, NumericError, binary

    assert binary(">", 3, 2.5, KHRONOS) is True
    assert binary("<=", 2.0, 2, KHRONOS) is True
    assert binary("+", 1, 0.5, KHRONOS) == 1.5 and isinstance(binary("*", 2, 1.5, KHRONOS), float)
    assert binary("<", 1e308, INT_POS_INF, KHRONOS) is True
    # a bool compared with a number is 0 or 1 (the Khronos unittest's `ne` of real and bool)
    assert binary("!=", 0.5, True, KHRONOS) is True and binary("==", 1.0, True, KHRONOS) is True
    assert binary("<", False, 1, KHRONOS) is True and binary("==", 0, False, KHRONOS) is True
    with pytest.raises(NumericError, match="one type"):
        binary("!=", 0.5, True, SPEC)
    with pytest.raises(NumericError, match="one type"):
        binary(">", 3, 2.5, SPEC)
    with pytest.raises(NumericError, match="two ints or two reals"):
        binary("+", 1, 0.5, SPEC)
