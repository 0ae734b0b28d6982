"""Module `math` (spec §4.2, and cumsum): every operator against independent NumPy.

Element-wise real functions follow IEEE 754 (nan outside the domain, ±inf at poles); integer
`/` and `%` follow the profile (spec: floor division, floored modulo; khronos: C truncation);
`<<`/`>>` with nan follow the profile (spec: nan propagates; khronos: the left operand).
"""

from __future__ import annotations

import numpy as np
import pytest

from refinterp.core.diagnostics import Diagnostic

from .conftest import run

SPECIAL = np.array([0.0, -0.0, 0.5, -0.5, 1.0, -1.0, 2.0, 1e300, -1e300, np.inf, -np.inf,
                    np.nan])


def round_half_away(x: np.ndarray) -> np.ndarray:
    """Halves away from zero, the sign of a zero kept (C `round`)."""
    whole = np.trunc(x)
    with np.errstate(invalid="ignore"):
        step = np.where(np.abs(x - whole) >= 0.5, np.sign(x), 0.0)
    return np.copysign(whole + step, x)


REAL_UNARY = {
    "rcp": lambda x: 1.0 / x, "sqrt": np.sqrt, "rsqr": lambda x: 1.0 / (x * x),
    "rsqrt": lambda x: 1.0 / np.sqrt(x), "exp": np.exp, "log": np.log,
    "log2": lambda x: np.log(x) / np.log(2.0),
    "sin": np.sin, "cos": np.cos, "tan": np.tan, "asin": np.arcsin, "acos": np.arccos,
    "atan": np.arctan, "sinh": np.sinh, "cosh": np.cosh, "tanh": np.tanh,
    "asinh": np.arcsinh, "acosh": np.arccosh, "atanh": np.arctanh,
    "floor": np.floor, "ceil": np.ceil, "round": round_half_away,
}


def close(actual, expected, rtol: float = 1e-14) -> None:
    np.testing.assert_allclose(np.asarray(actual, dtype=float), expected, rtol=rtol, atol=0,
                               equal_nan=True)


@pytest.mark.parametrize("name", sorted(REAL_UNARY))
def test_real_unary_on_random_values(name, rng):
    x = rng.uniform(0.1, 0.9, (2, 3)) * (1 if name in ("acosh",) else rng.choice([-1, 1],
                                                                              (2, 3)))
    if name == "acosh":
        x = x + 1.0
    if name in ("sqrt", "rsqrt", "log", "log2"):
        x = np.abs(x)
    with np.errstate(all="ignore"):
        close(run(f"math.{name}", {"x": x})["y"], REAL_UNARY[name](x))


@pytest.mark.parametrize("name", sorted(REAL_UNARY))
def test_real_unary_on_special_values(name):
    """±0, ±inf, nan, huge and out-of-domain values: the C99 Annex F results."""
    with np.errstate(all="ignore"):
        expected = REAL_UNARY[name](SPECIAL)
    out = run(f"math.{name}", {"x": SPECIAL.reshape(3, 4)})["y"].ravel()
    close(out, expected)
    zeros = expected == 0
    assert (np.signbit(out[zeros]) == np.signbit(expected[zeros])).all()


def test_round_halves_away_from_zero():
    x = np.array([0.5, 1.5, 2.5, -0.5, -2.5, 0.49999999999999994, -0.4])
    out = run("math.round", {"x": x})["y"]
    assert out.tolist() == [1.0, 2.0, 3.0, -1.0, -3.0, 0.0, -0.0]
    assert np.signbit(out[-1])


@pytest.mark.parametrize("dtype", [np.float64, np.int64])
def test_num_unary(dtype, rng):
    x = (rng.standard_normal((3, 4)) * 5).astype(dtype)
    x[0, 0] = 0
    assert np.array_equal(run("math.iden", {"x": x})["y"], x)
    assert np.array_equal(run("math.neg", {"x": x})["y"], -x)
    assert np.array_equal(run("math.sqr", {"x": x})["y"], x * x)
    assert np.array_equal(run("math.abs", {"x": x})["y"], np.abs(x))
    assert np.array_equal(run("math.sign", {"x": x})["y"], np.sign(x))
    assert run("math.sign", {"x": x})["y"].dtype == x.dtype


def test_iden_and_not_on_bools(rng):
    b = rng.random((2, 5)) < 0.5
    assert np.array_equal(run("math.iden", {"x": b})["y"], b)
    assert np.array_equal(run("math.not", {"x": b})["y"], ~b)
    assert np.array_equal(run("math.not", {"x": np.array(True)})["y"], np.array(False))


# ------------------------------------------------------------------ binary


REAL_BINARY = {
    "add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide,
    "mod": lambda a, b: a - b * np.floor(a / b), "pow": np.power,
    "min": np.minimum, "max": np.maximum,
    "lt": np.less, "gt": np.greater, "le": np.less_equal, "ge": np.greater_equal,
    "eq": np.equal, "ne": np.not_equal,
}


@pytest.mark.parametrize("name", sorted(REAL_BINARY))
def test_real_binary_with_numpy_broadcasting(name, rng):
    x = rng.uniform(0.5, 2.0, (4, 3))
    y = rng.uniform(0.5, 2.0, (3,))
    y[1] = x[2, 1]  # an equal pair for the comparisons
    close(run(f"math.{name}", {"x": x, "y": y})["z"], REAL_BINARY[name](x, y))
    # the other way round, and a scalar-like [1, 1] operand
    close(run(f"math.{name}", {"x": y, "y": x})["z"], REAL_BINARY[name](y, x))
    one = np.array([[1.25]])
    close(run(f"math.{name}", {"x": x, "y": one})["z"], REAL_BINARY[name](x, one))


@pytest.mark.parametrize("name", ["add", "mul", "lt", "max"])
def test_alignment_attributes(name, rng):
    """`rhs_align = 0` puts a rank-1 y on the first axis; `-1` counts from the back (one
    trailing unit axis after it); `lhs_align` likewise for x."""
    x, y = rng.standard_normal((4, 3)), rng.standard_normal(4)
    expected = REAL_BINARY[name](x, y[:, None])
    close(run(f"math.{name}", {"x": x, "y": y}, {"rhs_align": 0})["z"], expected)
    close(run(f"math.{name}", {"x": x, "y": y}, {"rhs_align": -1})["z"], expected)
    close(run(f"math.{name}", {"x": y, "y": x}, {"lhs_align": 0})["z"],
          REAL_BINARY[name](y[:, None], x))


def test_incompatible_shapes_are_a_diagnostic():
    with pytest.raises(Diagnostic, match="incompatible argument shapes"):
        run("math.add", {"x": np.zeros((2, 3)), "y": np.zeros(2)})


def c_div(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.sign(a) * np.sign(b) * (np.abs(a) // np.abs(b))


@pytest.mark.parametrize("profile", ["spec", "khronos"])
def test_int_division_and_modulo_per_profile(profile):
    a = np.array([7, -7, 7, -7, 6, 0])
    b = np.array([2, 2, -2, -2, 3, 5])
    div = run("math.div", {"x": a, "y": b}, profile=profile)["z"]
    mod = run("math.mod", {"x": a, "y": b}, profile=profile)["z"]
    if profile == "spec":  # floor division, floored modulo
        assert div.tolist() == (a // b).tolist() and mod.tolist() == np.mod(a, b).tolist()
    else:  # C: truncation, remainder with the sign of the dividend
        assert div.tolist() == c_div(a, b).tolist() and mod.tolist() == np.fmod(a, b).tolist()
    with pytest.raises(Diagnostic, match="division by zero"):
        run("math.div", {"x": a, "y": np.zeros(6, dtype=np.int64)}, profile=profile)


@pytest.mark.parametrize("profile", ["spec", "khronos"])
def test_real_modulo_per_profile(profile):
    a, b = np.array([5.5, -5.5, 5.5, -5.5]), np.array([2.0, 2.0, -2.0, -2.0])
    mod = run("math.mod", {"x": a, "y": b}, profile=profile)["z"]
    close(mod, a - b * np.floor(a / b) if profile == "spec" else np.fmod(a, b))


def test_int_binary(rng):
    a, b = rng.integers(-9, 9, (3, 4)), rng.integers(1, 5, (4,))
    assert np.array_equal(run("math.add", {"x": a, "y": b})["z"], a + b)
    assert np.array_equal(run("math.sub", {"x": a, "y": b})["z"], a - b)
    assert np.array_equal(run("math.mul", {"x": a, "y": b})["z"], a * b)
    assert np.array_equal(run("math.pow", {"x": a, "y": b})["z"], a ** b)
    assert np.array_equal(run("math.min", {"x": a, "y": b})["z"], np.minimum(a, b))
    assert np.array_equal(run("math.max", {"x": a, "y": b})["z"], np.maximum(a, b))
    assert np.array_equal(run("math.ge", {"x": a, "y": b})["z"], a >= b)
    assert np.array_equal(run("math.eq", {"x": a, "y": b})["z"], a == b)


@pytest.mark.parametrize("profile", ["spec", "khronos"])
def test_min_max_with_nan_per_profile(profile):
    x, y = np.array([np.nan, 1.0, 2.0]), np.array([1.0, np.nan, 3.0])
    low = run("math.min", {"x": x, "y": y}, profile=profile)["z"]
    high = run("math.max", {"x": x, "y": y}, profile=profile)["z"]
    if profile == "spec":
        close(low, np.minimum(x, y)), close(high, np.maximum(x, y))
    else:  # std::min/max: the left operand unless the right one compares below/above it
        close(low, [np.nan, 1.0, 2.0]), close(high, [np.nan, 1.0, 3.0])


def test_comparisons_of_mixed_types_under_khronos(rng):
    """The Khronos comparisons take two independent types: C++ promotion."""
    x, y = rng.integers(-3, 3, (4, 5)), rng.standard_normal((4, 1))
    assert np.array_equal(run("math.gt", {"x": x, "y": y}, profile="khronos")["z"], x > y)
    b = rng.random(5) < 0.5
    r = rng.choice([0.0, 1.0, 0.5], (4, 5))
    assert np.array_equal(run("math.ne", {"x": r, "y": b}, profile="khronos")["z"], r != b)
    with pytest.raises(Diagnostic, match="one type"):
        run("math.gt", {"x": x, "y": y}, profile="spec")


def test_logical_binary(rng):
    a, b = rng.random((3, 4)) < 0.5, rng.random((4,)) < 0.5
    assert np.array_equal(run("math.and", {"x": a, "y": b})["z"], a & b)
    assert np.array_equal(run("math.or", {"x": a, "y": b})["z"], a | b)
    assert np.array_equal(run("math.xor", {"x": a, "y": b})["z"], a ^ b)
    assert np.array_equal(run("math.and", {"x": b, "y": a}, {"lhs_align": 1})["z"], b & a)
    assert np.array_equal(run("math.or", {"x": a, "y": b[:3]}, {"rhs_align": 0})["z"],
                          a | b[:3, None])
    assert np.array_equal(run("math.xor", {"x": a, "y": np.array([True])})["z"], ~a)


# ------------------------------------------------------------------ select, axpb, axpby, clamp


def test_select(rng):
    c = rng.random((3, 4)) < 0.5
    x, y = rng.standard_normal((3, 4)), rng.standard_normal((4,))
    close(run("math.select", {"c": c, "x": x, "y": y})["z"], np.where(c, x, y))
    c1 = rng.random(3) < 0.5
    close(run("math.select", {"c": c1, "x": x, "y": y}, {"cond_align": 0})["z"],
          np.where(c1[:, None], x, y))
    ints = rng.integers(0, 9, (3, 4))
    assert np.array_equal(run("math.select", {"c": c, "x": ints, "y": -ints})["z"],
                          np.where(c, ints, -ints))


def test_axpb_and_axpby(rng):
    a, x, b = rng.standard_normal((1,)), rng.standard_normal((2, 3)), rng.standard_normal(3)
    close(run("math.axpb", {"a": a, "x": x, "b": b})["y"], a * x + b)
    a2 = rng.standard_normal(2)
    close(run("math.axpb", {"a": a2, "x": x, "b": b}, {"a_align": 0})["y"], a2[:, None] * x + b)
    y = rng.standard_normal((2, 3))
    close(run("math.axpby", {"a": a, "x": x, "b": b, "y": y})["z"], a * x + b * y)
    close(run("math.axpby", {"a": a2, "x": x, "b": b[:2], "y": y},
              {"a_align": 0, "b_align": 0})["z"], a2[:, None] * x + b[:2, None] * y)


def test_clamp(rng):
    x = rng.standard_normal((3, 4)) * 2
    low, high = np.array([-1.0]), np.array([0.5, 1.0, 1.5, 2.0])
    close(run("math.clamp", {"x": x, "a": low, "b": high})["y"],
          np.where(x < low, low, np.where(x > high, high, x)))
    # a minimum above the maximum gives the minimum; nan stays nan; ints
    out = run("math.clamp", {"x": np.array([0.0, 5.0, np.nan]), "a": np.array([3.0]),
                             "b": np.array([1.0])})["y"]
    close(out, [3.0, 1.0, np.nan])
    ints = rng.integers(-10, 10, (2, 5))
    assert np.array_equal(run("math.clamp", {"x": ints, "a": np.array([-3]),
                                             "b": np.array([4])})["y"], np.clip(ints, -3, 4))
    per_row = np.array([0, 1])
    assert np.array_equal(run("math.clamp", {"x": ints, "a": per_row, "b": np.array([4])},
                              {"min_align": 0})["y"], np.clip(ints, per_row[:, None], 4))


# ------------------------------------------------------------------ n-ary


@pytest.mark.parametrize("n", [1, 3])
def test_nary_numeric(n, rng):
    xs = [rng.integers(-5, 5, (2, 3)) for _ in range(n)]
    stacked = np.stack(xs)
    assert np.array_equal(run("math.sum_n", {"xs": xs})["y"], stacked.sum(0))
    assert np.array_equal(run("math.prod_n", {"xs": xs})["y"], stacked.prod(0))
    assert np.array_equal(run("math.min_n", {"xs": xs})["y"], stacked.min(0))
    assert np.array_equal(run("math.max_n", {"xs": xs})["y"], stacked.max(0))
    assert np.array_equal(run("math.argmin_n", {"xs": xs})["y"], stacked.argmin(0))
    assert np.array_equal(run("math.argmax_n", {"xs": xs})["y"], stacked.argmax(0))
    reals = [rng.standard_normal(4) for _ in range(n)]
    close(run("math.sum_n", {"xs": reals})["y"], np.sum(reals, axis=0))
    close(run("math.max_n", {"xs": reals})["y"], np.max(reals, axis=0))


def test_nary_ties_pick_the_first_input_and_one_input_is_copied():
    xs = [np.array([1, 2, 2]), np.array([1, 2, 3]), np.array([0, 2, 3])]
    assert run("math.argmax_n", {"xs": xs})["y"].tolist() == [0, 0, 1]
    assert run("math.argmin_n", {"xs": xs})["y"].tolist() == [2, 0, 0]
    negative_zero = [np.array([-0.0])]
    assert np.signbit(run("math.sum_n", {"xs": negative_zero})["y"][0])


def test_nary_logical(rng):
    xs = [rng.random((2, 4)) < 0.5 for _ in range(3)]
    assert np.array_equal(run("math.any_n", {"xs": xs})["y"], np.any(xs, axis=0))
    assert np.array_equal(run("math.all_n", {"xs": xs})["y"], np.all(xs, axis=0))
    assert np.array_equal(run("math.any_n", {"xs": xs[:1]})["y"], xs[0])
    assert np.array_equal(run("math.all_n", {"xs": xs[:1]})["y"], xs[0])
