"""The array rules of refinterp.numeric.array_rules give, element by element, the values of the
scalar rules of refinterp.numeric.rules (the definition), or defer where the scalar rule raises or
an int may leave int64."""

import itertools
import math

import numpy as np
import pytest

from refinterp.numeric import array_rules as A
from refinterp.numeric import rules as S

REALS = [0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 2.5, -2.5, 1.5, 3.0, -7.25, 1e300, -1e300, 1e-310,
         math.inf, -math.inf, math.nan, 0.49999999999999994]
INTS = [0, 1, -1, 2, -2, 3, -7, 7, 100, -100, 2 ** 31, 2 ** 62, -(2 ** 62), 2 ** 63 - 1,
        -(2 ** 63)]
BOOLS = [False, True]
PROFILES = [S.SPEC, S.KHRONOS]


def same(x, y) -> bool:
    """Equal values of one kind; nan equals nan; the sign of a zero counts."""
    if isinstance(x, float) or isinstance(y, float):
        x, y = float(x), float(y)
        if math.isnan(x) or math.isnan(y):
            return math.isnan(x) and math.isnan(y)
        return x == y and math.copysign(1, x) == math.copysign(1, y)
    return type(x) is type(y) and x == y


def scalar_of(array: np.ndarray, index: int):
    value = array.reshape(-1)[index] if array.ndim else array[()]
    return value.item()


def check_binary(op, left, right, profile):
    a = np.array(left)
    b = np.array(right)
    pairs = list(itertools.product(range(len(left)), range(len(right))))
    xs = np.array([left[i] for i, _ in pairs], dtype=a.dtype)
    ys = np.array([right[j] for _, j in pairs], dtype=b.dtype)
    for position, (i, j) in enumerate(pairs):
        try:
            expected = S.binary(op, left[i], right[j], profile)
        except S.NumericError:
            expected = "error"
        if isinstance(expected, int) and not isinstance(expected, bool) and \
                not A.INT64_MIN <= expected <= A.INT64_MAX:
            expected = "error"  # the reference reports an int output beyond int64
        one = np.zeros(len(pairs), dtype=bool)
        one[position] = True
        try:
            got = scalar_of(A.binary(op, xs, ys, profile, active=one), position)
        except A.Refused:
            got = "deferred"
        if expected == "error":
            assert got == "deferred", (op, left[i], right[j], profile.name, got)
        elif got != "deferred":  # deferring an exact case is allowed (the scalar rule decides)
            if op == "**" and isinstance(expected, float) and math.isfinite(expected) and \
                    expected != 0:  # NumPy's pow may differ from libm's in the last place
                assert math.isclose(got, expected, rel_tol=4e-16), (left[i], right[j], got)
                continue
            assert same(got, expected), (op, left[i], right[j], profile.name, got, expected)


@pytest.mark.parametrize("profile", PROFILES, ids=lambda p: p.name)
@pytest.mark.parametrize("op", ["+", "-", "*", "/", "\\", "%", "**", "<<", ">>", "<", "<=",
                                ">", ">=", "==", "!="])
def test_real_binary_matches_scalar(op, profile):
    check_binary(op, REALS, REALS, profile)


@pytest.mark.parametrize("profile", PROFILES, ids=lambda p: p.name)
@pytest.mark.parametrize("op", ["+", "-", "*", "/", "\\", "%", "<<", ">>", "<", "==", "!="])
def test_int_binary_matches_scalar(op, profile):
    check_binary(op, INTS, INTS, profile)


@pytest.mark.parametrize("profile", PROFILES, ids=lambda p: p.name)
def test_int_power_matches_scalar(profile):
    check_binary("**", [0, 1, -1, 2, -3, 10, 2 ** 31], [0, 1, 2, 3, 5, 20, 62, -1, -2],
                 profile)


@pytest.mark.parametrize("op", ["&&", "||", "^", "=>", "==", "!=", "<"])
def test_bool_binary_matches_scalar(op):
    check_binary(op, BOOLS, BOOLS, S.SPEC)


@pytest.mark.parametrize("profile", PROFILES, ids=lambda p: p.name)
def test_mixed_int_real(profile):
    check_binary("+", [1, -3], [0.5, math.inf], profile)
    check_binary("<", [1, -3], [0.5, math.inf], profile)


@pytest.mark.parametrize("op", ["==", "!=", "<", ">="])
@pytest.mark.parametrize("profile", PROFILES, ids=lambda p: p.name)
def test_bool_compared_with_numbers(op, profile):
    check_binary(op, [True, False, True], [0.5, 0.0, 1.0], profile)
    check_binary(op, [1, 0, 2], [True, False, True], profile)


def check_unary(function, scalar, values, profile):
    array = np.array(values)
    for position, value in enumerate(values):
        try:
            expected = scalar(value, profile)
        except S.NumericError:
            expected = "error"
        if isinstance(expected, (int, S.IntInfinity)) and not isinstance(expected, bool) and \
                (isinstance(expected, S.IntInfinity) or
                 not A.INT64_MIN <= expected <= A.INT64_MAX):
            expected = "error"
        one = np.zeros(len(values), dtype=bool)
        one[position] = True
        try:
            got = scalar_of(function(array, profile, one), position)
        except A.Refused:
            got = "deferred"
        if expected == "error":
            assert got == "deferred", (value, profile.name, got)
        elif got != "deferred":
            if isinstance(expected, float) and not math.isnan(expected) and \
                    math.isfinite(expected) and expected != 0:
                # NumPy's transcendental functions may differ from libm in the last place
                assert math.isclose(got, expected, rel_tol=4e-16), (value, got, expected)
            else:
                assert same(got, expected), (value, profile.name, got, expected)


@pytest.mark.parametrize("profile", PROFILES, ids=lambda p: p.name)
@pytest.mark.parametrize("name", S.BUILTINS)
def test_builtins_match_scalar(name, profile):
    check_unary(lambda a, p, m: A.builtin(name, a, p, m),
                lambda v, p: S.builtin(name, v, p), REALS, profile)
    if name in S.NUM_BUILTINS:
        check_unary(lambda a, p, m: A.builtin(name, a, p, m),
                    lambda v, p: S.builtin(name, v, p), INTS, profile)


@pytest.mark.parametrize("target", ["int", "real", "bool"])
def test_casts_match_scalar(target):
    for values in (REALS, INTS, BOOLS):
        check_unary(lambda a, p, m: A.cast(target, a, p, m),
                    lambda v, p: S.cast(target, v, p), values, S.SPEC)


@pytest.mark.parametrize("op", ["-", "+"])
def test_unary_matches_scalar(op):
    for values in (REALS, INTS):
        check_unary(lambda a, p, m: A.unary(op, a, p, m),
                    lambda v, p: S.unary(op, v, p), values, S.SPEC)
    check_unary(lambda a, p, m: A.unary("!", a, p, m),
                lambda v, p: S.unary("!", v, p), BOOLS, S.SPEC)


def test_inactive_elements_never_defer():
    a = np.array([1, 2, 3])
    b = np.array([1, 0, 1])
    with pytest.raises(A.Refused):
        A.binary("/", a, b, S.SPEC)
    result = A.binary("/", a, b, S.SPEC, active=np.array([True, False, True]))
    assert result[0] == 1 and result[2] == 3
