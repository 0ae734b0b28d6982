"""The `nx` module (refinterp/stdlib/nx.sknd): the Nx backend contract. Every operator is
compared with independent NumPy / Python code written here or with hand values, including
each corner case the contract names (truncating division, fmod signs, sign of NaN, round half
away from zero, argmax ties, NaN-last sorts, scatter Set vs Add, fold summing overlaps, casts
truncating toward zero, Threefry known answers). `run` (conftest) runs both engines and
checks that they agree; the rules that must not depend on the semantics profile are also run
under `khronos`."""

from __future__ import annotations

import math

import numpy as np
import pytest

from refinterp.core.diagnostics import Diagnostic

from .conftest import run

NAN, INF = math.nan, math.inf

SPECIAL = np.array([NAN, INF, -INF, -0.0, 0.0, 1.0, -1.0, 0.5, -2.5, 2.5, 3.0, -7.5, 1e300,
                    5e-324])


def grid(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Every pair of `values`: (a, b) flattened."""
    a, b = np.meshgrid(values, values, indexing="ij")
    return a.ravel(), b.ravel()


def same(actual: np.ndarray, expected: np.ndarray, zero_sign: bool = True) -> None:
    """Equal element by element: NaN where NaN, and (with zero_sign) the same sign of zero."""
    actual, expected = np.asarray(actual), np.asarray(expected)
    assert actual.shape == expected.shape, (actual.shape, expected.shape)
    np.testing.assert_array_equal(actual, expected)
    if zero_sign and actual.dtype.kind == "f":
        zeros = expected == 0
        np.testing.assert_array_equal(np.signbit(actual[zeros]), np.signbit(expected[zeros]))


# ----------------------------------------------------------------------------- creation, memory


def test_full_from_host_to_host_contiguous_copy_assign():
    same(run("nx.full", {"value": np.array(2.5)}, {"shape": [2, 3]})["out"], np.full((2, 3), 2.5))
    same(run("nx.full", {"value": np.array(-4)}, {"shape": []})["out"], np.array(-4))
    same(run("nx.full", {"value": np.array(True)}, {"shape": [0, 2]})["out"],
         np.ones((0, 2), dtype=bool))
    buf = np.array([3.0, -0.0, NAN])
    same(run("nx.from_host", {"buf": buf})["out"], buf)
    same(run("nx.from_host", {"buf": np.arange(4)})["out"], np.arange(4))
    t = np.arange(24.0).reshape(2, 3, 4).transpose(2, 0, 1)  # a non-contiguous view
    same(run("nx.to_host", {"t": t})["buf"], t.ravel(order="C"))
    same(run("nx.to_host", {"t": np.array(7)})["buf"], np.array([7]))
    for name in ("contiguous", "copy"):
        same(run(f"nx.{name}", {"t": t})["out"], t)
        same(run(f"nx.{name}", {"t": np.array([True, False])})["out"], [True, False])
    dst, src = np.zeros((2, 2)), np.array([[1.0, -0.0], [NAN, INF]])
    same(run("nx.assign", {"dst": dst, "src": src})["out"], src)
    same(run("nx.assign", {"dst": np.zeros(3, dtype=np.int64), "src": np.arange(3)})["out"],
         np.arange(3))


def test_full_rejects_negative_extents():
    with pytest.raises(Diagnostic, match="non-negative"):
        run("nx.full", {"value": np.array(1.0)}, {"shape": [-1]})


# ----------------------------------------------------------------------------- binary arithmetic


@pytest.mark.parametrize("name, ufunc", [("add", np.add), ("sub", np.subtract),
                                         ("mul", np.multiply)])
def test_add_sub_mul(rng, name, ufunc):
    a, b = grid(SPECIAL)
    with np.errstate(all="ignore"):
        same(run(f"nx.{name}", {"a": a, "b": b})["out"], ufunc(a, b))
    x, y = rng.integers(-50, 50, (2, 3, 4))
    same(run(f"nx.{name}", {"a": x, "b": y})["out"], ufunc(x, y))


INT_A = np.array([7, -7, 7, -7, 0, 1, -1, 6, -6, 13, -13, 2**40 + 3])
INT_B = np.array([2, 2, -2, -2, 3, 5, 5, 3, 3, -4, 4, -7])


@pytest.mark.parametrize("profile", ["spec", "khronos"])
def test_div_integers_truncate_toward_zero(profile):
    """"Integer dtypes use truncation toward zero (C division)." -7 / 2 = -3 in both profiles."""
    out = run("nx.div", {"a": INT_A, "b": INT_B}, profile=profile)["out"]
    expected = [math.trunc(a / b) if abs(a) < 2**50 else -(abs(a) // abs(b))
                for a, b in zip(INT_A.tolist(), INT_B.tolist())]
    same(out, np.array(expected))
    assert out.tolist()[:4] == [3, -3, -3, 3]


def test_div_reals_are_ieee():
    a, b = grid(SPECIAL)
    with np.errstate(all="ignore"):
        same(run("nx.div", {"a": a, "b": b})["out"], np.true_divide(a, b))
    same(run("nx.div", {"a": np.array([1.0, -1.0, 0.0]), "b": np.array([0.0, 0.0, -0.0])})["out"],
         np.array([INF, -INF, NAN]))


@pytest.mark.parametrize("profile", ["spec", "khronos"])
def test_mod_follows_the_dividend(profile):
    """"Integers use C's % operator (truncated division). Floats use fmod. The sign of the
    result follows the dividend a." -7 % 2 = -1, 7 % -2 = 1."""
    out = run("nx.mod_", {"a": INT_A, "b": INT_B}, profile=profile)["out"]
    same(out, np.fmod(INT_A, INT_B))
    assert out.tolist()[:4] == [1, -1, 1, -1]
    a, b = grid(SPECIAL)
    with np.errstate(all="ignore"):
        same(run("nx.mod_", {"a": a, "b": b}, profile=profile)["out"], np.fmod(a, b))
    hand = run("nx.mod_", {"a": np.array([-7.5, 7.5, -0.0, -4.0]),
                           "b": np.array([2.0, -2.0, 3.0, 2.0])}, profile=profile)["out"]
    same(hand, np.array([-1.5, 1.5, -0.0, -0.0]))


@pytest.mark.parametrize("name", ["div", "mod_"])
def test_integer_division_by_zero_is_a_diagnostic(name):
    with pytest.raises(Diagnostic, match="by zero"):
        run(f"nx.{name}", {"a": np.array([1, 2]), "b": np.array([1, 0])})


def test_pow():
    a, b = grid(SPECIAL)
    with np.errstate(all="ignore"):  # C pow and NumPy's power may differ in the last place
        np.testing.assert_allclose(run("nx.pow", {"base": a, "exponent": b})["out"],
                                   np.power(a, b), rtol=4e-16, atol=0)
    same(run("nx.pow", {"base": np.array([-8.0, 0.0, NAN]),
                        "exponent": np.array([1 / 3, -1.0, 0.0])})["out"],
         np.array([NAN, INF, 1.0]))
    # ints: exact; a negative exponent truncates 1 / base^-e toward zero (choice)
    base = np.array([2, -3, 3, 0, 2, -1, -1, 1, 7])
    exponent = np.array([10, 3, 0, 0, -1, -3, -2, -5, 21])
    expected = [1024, -27, 1, 1, 0, -1, 1, 1, 7**21]
    same(run("nx.pow", {"base": base, "exponent": exponent})["out"], np.array(expected))
    same(run("nx.pow", {"base": base, "exponent": exponent}, profile="khronos")["out"],
         np.array(expected))
    with pytest.raises(Diagnostic, match="by zero"):
        run("nx.pow", {"base": np.array([0]), "exponent": np.array([-1])})


def test_atan2_all_quadrants_and_signed_zeros():
    values = np.array([NAN, INF, -INF, -0.0, 0.0, 1.0, -1.0, 2.5, -3.0, 1e-300, 1e300])
    y, x = grid(values)
    out = run("nx.atan2", {"y": y, "x": x})["out"]
    expected = np.arctan2(y, x)
    np.testing.assert_allclose(out, expected, rtol=4e-16, atol=0)
    zeros = expected == 0
    np.testing.assert_array_equal(np.signbit(out[zeros]), np.signbit(expected[zeros]))
    assert out[(y == 1.0) & (x == -1.0)] == pytest.approx(3 * math.pi / 4)
    assert out[(y == -0.0) & np.signbit(y) & (x == -1.0)] == -math.pi  # C: -pi for y = -0.0


# ----------------------------------------------------------------------------- comparison, min, max


@pytest.mark.parametrize("name, ufunc", [("cmpeq", np.equal), ("cmpne", np.not_equal),
                                         ("cmplt", np.less), ("cmple", np.less_equal)])
def test_comparisons(rng, name, ufunc):
    a, b = grid(SPECIAL)
    same(run(f"nx.{name}", {"a": a, "b": b})["out"], ufunc(a, b))
    x, y = rng.integers(-3, 3, (2, 4, 5))
    same(run(f"nx.{name}", {"a": x, "b": y})["out"], ufunc(x, y))
    p, q = grid(np.array([False, True]))
    same(run(f"nx.{name}", {"a": p, "b": q})["out"], ufunc(p, q))


@pytest.mark.parametrize("name, ufunc", [("max", np.maximum), ("min", np.minimum)])
@pytest.mark.parametrize("profile", ["spec", "khronos"])
def test_max_min_propagate_nan(rng, name, ufunc, profile):
    a, b = grid(SPECIAL)
    out = run(f"nx.{name}", {"a": a, "b": b}, profile=profile)["out"]
    same(out, ufunc(a, b), zero_sign=False)  # NaN from either side, as NumPy
    x, y = rng.integers(-9, 9, (2, 10))
    same(run(f"nx.{name}", {"a": x, "b": y}, profile=profile)["out"], ufunc(x, y))
    # equal operands give a (choice): the sign of zero shows it
    tie = run(f"nx.{name}", {"a": np.array([-0.0, 0.0]), "b": np.array([0.0, -0.0])})["out"]
    np.testing.assert_array_equal(np.signbit(tie), [True, False])


# ----------------------------------------------------------------------------- bitwise


@pytest.mark.parametrize("name, ufunc", [("and_", np.bitwise_and), ("or_", np.bitwise_or),
                                         ("xor", np.bitwise_xor)])
def test_bitwise(rng, name, ufunc):
    x = np.array([6, -1, 0, 2**40 + 5, -(2**63), 12345])
    y = np.array([3, 5, -7, 7, -1, -12346])
    same(run(f"nx.{name}", {"a": x, "b": y})["out"], ufunc(x, y))
    p, q = grid(np.array([False, True]))
    same(run(f"nx.{name}", {"a": p, "b": q})["out"],
         {"and_": p & q, "or_": p | q, "xor": p ^ q}[name])
    with pytest.raises(Diagnostic, match="int or bool"):
        run(f"nx.{name}", {"a": np.array([1.0]), "b": np.array([2.0])})


# ----------------------------------------------------------------------------- unary


def test_neg_abs_sqrt_recip(rng):
    with np.errstate(all="ignore"):
        same(run("nx.neg", {"x": SPECIAL})["out"], -SPECIAL)
        same(run("nx.abs", {"x": SPECIAL})["out"], np.abs(SPECIAL))
        same(run("nx.sqrt", {"x": SPECIAL})["out"], np.sqrt(SPECIAL))
        same(run("nx.recip", {"x": SPECIAL})["out"], 1.0 / SPECIAL)
    ints = np.array([5, -5, 0, -(2**40)])
    same(run("nx.neg", {"x": ints})["out"], -ints)
    same(run("nx.abs", {"x": ints})["out"], np.abs(ints))
    # int recip: 1 / x truncated toward zero (as div)
    same(run("nx.recip", {"x": np.array([1, -1, 2, -3])})["out"], np.array([1, -1, 0, 0]))
    with pytest.raises(Diagnostic, match="by zero"):
        run("nx.recip", {"x": np.array([0])})


@pytest.mark.parametrize("profile", ["spec", "khronos"])
def test_sign_of_nan_is_nan(profile):
    """"Returns NaN for floating-point NaN inputs." -1 / 0 / 1 otherwise; -0.0 gives 0."""
    out = run("nx.sign", {"x": SPECIAL}, profile=profile)["out"]
    same(out, np.sign(SPECIAL), zero_sign=False)
    assert math.isnan(out[0])
    same(run("nx.sign", {"x": np.array([-9, 0, 4])})["out"], np.array([-1, 0, 1]))


@pytest.mark.parametrize("name", ["exp", "log", "sin", "cos", "tan", "asin", "acos", "atan",
                                  "sinh", "cosh", "tanh"])
def test_transcendental(rng, name):
    x = np.concatenate([SPECIAL, rng.uniform(-3, 3, 20)])
    with np.errstate(all="ignore"):
        expected = {"asin": np.arcsin, "acos": np.arccos, "atan": np.arctan}.get(
            name, getattr(np, name))(x)
    np.testing.assert_allclose(run(f"nx.{name}", {"x": x})["out"], expected, rtol=1e-14,
                               atol=1e-300)


def test_inverse_trigonometric_ranges(rng):
    x = rng.uniform(-1, 1, 200)
    assert np.all(np.abs(run("nx.asin", {"x": x})["out"]) <= math.pi / 2)
    acos = run("nx.acos", {"x": x})["out"]
    assert np.all((acos >= 0) & (acos <= math.pi))
    assert np.all(np.abs(run("nx.atan", {"x": np.array([-INF, INF, 1e300])})["out"])
                  <= math.pi / 2)


def test_erf():
    x = np.array([0.0, -0.0, 0.5, -1.5, 3.0, INF, -INF, NAN])
    same(run("nx.erf", {"x": x})["out"], np.array([math.erf(v) for v in x]))


def round_half_away(v: float) -> float:
    """C round, computed exactly: the fraction |v| - floor(|v|) is exact for doubles."""
    if not math.isfinite(v):
        return v
    whole = math.floor(abs(v))
    return math.copysign(whole + (1.0 if abs(v) - whole >= 0.5 else 0.0), v)


ROUNDING = np.array([-2.5, 2.5, -0.5, 0.5, 1.5, -1.5, 0.49999999999999994, -0.4, 2.7, -2.7,
                     4503599627370497.0, -0.0, NAN, INF, -INF])


@pytest.mark.parametrize("profile", ["spec", "khronos"])
def test_rounding(profile):
    """round: "half away from zero (C's round)"; trunc/ceil/floor as C; zeros keep signs."""
    run_ = lambda name, x: run(f"nx.{name}", {"x": x}, profile=profile)["out"]  # noqa: E731
    same(run_("round", ROUNDING), np.array([round_half_away(v) for v in ROUNDING]))
    assert run_("round", np.array([-2.5, 2.5, 0.5]))[:3].tolist() == [-3.0, 3.0, 1.0]
    same(run_("trunc", ROUNDING), np.trunc(ROUNDING))
    same(run_("ceil", ROUNDING), np.ceil(ROUNDING))
    same(run_("floor", ROUNDING), np.floor(ROUNDING))


@pytest.mark.parametrize("name", ["round", "trunc", "ceil", "floor"])
def test_rounding_of_integers_is_the_identity(name):
    """"For integer dtypes, all rounding operations are the identity." (exact beyond 2^53)"""
    x = np.array([-7, 0, 3, 2**60 + 1, -(2**60) - 1])
    same(run(f"nx.{name}", {"x": x})["out"], x)


def test_where(rng):
    cond = rng.random((3, 4)) < 0.5
    a, b = rng.standard_normal((2, 3, 4))
    same(run("nx.where", {"cond": cond, "if_true": a, "if_false": b})["out"], np.where(cond, a, b))
    p, q = rng.integers(0, 9, (2, 5))
    c = np.array([True, False, True, False, False])
    same(run("nx.where", {"cond": c, "if_true": p, "if_false": q})["out"], np.where(c, p, q))


# ----------------------------------------------------------------------------- reductions


@pytest.mark.parametrize("name, reference", [("reduce_sum", np.sum), ("reduce_prod", np.prod),
                                             ("reduce_max", np.max), ("reduce_min", np.min)])
@pytest.mark.parametrize("axes, keepdims", [([1], False), ([0, 2], True), ([0, 1, 2], False),
                                            ([], False)])
def test_reductions(rng, name, reference, axes, keepdims):
    x = rng.uniform(-2, 2, (2, 3, 4))
    out = run(f"nx.{name}", {"x": x}, {"axes": axes, "keepdims": keepdims})["out"]
    np.testing.assert_allclose(out, reference(x, axis=tuple(axes), keepdims=keepdims),
                               rtol=1e-13)
    ints = rng.integers(-3, 4, (2, 3))
    out = run(f"nx.{name}", {"x": ints}, {"axes": axes[:1]})["out"]
    same(out, reference(ints, axis=tuple(axes[:1])))


@pytest.mark.parametrize("profile", ["spec", "khronos"])
def test_reduce_max_min_propagate_nan(profile):
    x = np.array([[1.0, NAN, 3.0], [4.0, 5.0, -1.0], [-INF, -INF, -INF]])
    for name, reference in (("reduce_max", np.max), ("reduce_min", np.min)):
        out = run(f"nx.{name}", {"x": x}, {"axes": [1]}, profile=profile)["out"]
        same(out, reference(x, axis=1))


def test_empty_reductions():
    x = np.zeros((0, 3))
    same(run("nx.reduce_sum", {"x": x}, {"axes": [0]})["out"], np.zeros(3))
    same(run("nx.reduce_prod", {"x": x}, {"axes": [0]})["out"], np.ones(3))
    with pytest.raises(Diagnostic, match="positive"):
        run("nx.reduce_max", {"x": x}, {"axes": [0]})


def test_reduction_axes_are_checked():
    x = np.zeros((2, 3))
    with pytest.raises(Diagnostic, match="non-negative"):
        run("nx.reduce_sum", {"x": x}, {"axes": [-1]})
    with pytest.raises(Diagnostic, match="distinct"):
        run("nx.reduce_sum", {"x": x}, {"axes": [1, 1]})


@pytest.mark.parametrize("name, reference", [("argmax", np.argmax), ("argmin", np.argmin)])
def test_argmax_argmin_take_the_first_occurrence(rng, name, reference):
    x = rng.integers(-2, 3, (3, 5, 4)).astype(float)  # many ties
    for axis in range(3):
        for keepdims in (False, True):
            out = run(f"nx.{name}", {"x": x}, {"axis": axis, "keepdims": keepdims})["out"]
            same(out, reference(x, axis=axis, keepdims=keepdims))
    hand = np.array([[1.0, 3.0, 3.0, 1.0], [NAN, 5.0, NAN, 9.0], [2.0, 2.0, 2.0, 2.0]])
    same(run(f"nx.{name}", {"x": hand}, {"axis": 1})["out"], reference(hand, axis=1))
    assert run(f"nx.{name}", {"x": hand}, {"axis": 1})["out"].tolist()[1:] == [0, 0]
    ints = np.array([[4, 9, 9], [7, 7, 1]])
    same(run(f"nx.{name}", {"x": ints}, {"axis": 1})["out"], reference(ints, axis=1))


def test_argmax_rejects_an_empty_axis():
    with pytest.raises(Diagnostic, match="positive extent"):
        run("nx.argmax", {"x": np.zeros((2, 0))}, {"axis": 1})


@pytest.mark.parametrize("op, reference", [("Sum", np.cumsum), ("Prod", np.cumprod),
                                           ("Max", np.maximum.accumulate),
                                           ("Min", np.minimum.accumulate)])
def test_associative_scan_is_inclusive(rng, op, reference):
    x = rng.uniform(-2, 2, (3, 4))
    for axis in (0, 1):
        out = run("nx.associative_scan", {"x": x}, {"axis": axis, "op": op})["out"]
        np.testing.assert_allclose(out, reference(x, axis=axis), rtol=1e-14)
    ints = rng.integers(-3, 4, (2, 5))
    same(run("nx.associative_scan", {"x": ints}, {"axis": 1, "op": op})["out"],
         reference(ints, axis=1))
    with_nan = np.array([1.0, NAN, 3.0, -1.0])
    same(run("nx.associative_scan", {"x": with_nan}, {"axis": 0, "op": op})["out"],
         reference(with_nan))


@pytest.mark.parametrize("name, reference", [("sum", np.cumsum), ("prod", np.cumprod),
                                             ("max", np.maximum.accumulate),
                                             ("min", np.minimum.accumulate)])
def test_scan_primitives_are_the_inclusive_scans(rng, name, reference):
    x = rng.uniform(-2, 2, (3, 4))
    out = run(f"nx.scan_{name}", {"x": x}, {"axis": 1})["out"]
    np.testing.assert_allclose(out, reference(x, axis=1), rtol=1e-14)
    with pytest.raises(Diagnostic, match="'axis' must be non-negative"):
        run(f"nx.scan_{name}", {"x": x}, {"axis": 2})


def test_scatter_primitives_set_last_and_add_all():
    inputs = {"template": np.zeros(3), "indices": np.array([2, 2, 0]),
              "updates": np.array([1.0, 5.0, 7.0])}
    same(run("nx.scatter_set", inputs, {"axis": 0})["out"], np.array([7.0, 0.0, 5.0]))
    same(run("nx.scatter_add", inputs, {"axis": 0})["out"], np.array([7.0, 0.0, 6.0]))
    with pytest.raises(Diagnostic, match="indices must have the rank of template"):
        run("nx.scatter_add", {**inputs, "template": np.zeros((3, 1))}, {"axis": 0})


def test_associative_scan_rejects_an_unknown_op():
    with pytest.raises(Diagnostic, match="'op' must be one of"):
        run("nx.associative_scan", {"x": np.zeros(3)}, {"axis": 0, "op": "Mean"})


# ----------------------------------------------------------------------------- sort


def reference_order(line: list[float], descending: bool) -> list[int]:
    """Python's stable sort: numbers ascending (descending), every NaN after them, equal values
    in index order."""
    numbers = [i for i, v in enumerate(line) if not math.isnan(v)]
    nans = [i for i, v in enumerate(line) if math.isnan(v)]
    return sorted(numbers, key=lambda i: -line[i] if descending else line[i]) + nans


@pytest.mark.parametrize("descending", [False, True])
def test_sort_and_argsort_put_nan_last_in_both_directions(rng, descending):
    x = rng.integers(-3, 4, (3, 7)).astype(float)
    x[rng.random(x.shape) < 0.2] = NAN
    x[0, :4] = [NAN, -0.0, 0.0, INF]
    for axis in (0, 1):
        moved = np.moveaxis(x, axis, -1)
        order = np.array([reference_order(list(line), descending) for line in moved.reshape(
            -1, moved.shape[-1])]).reshape(moved.shape)
        expected_order = np.moveaxis(order, -1, axis)
        attrs = {"axis": axis, "descending": descending}
        same(run("nx.argsort", {"x": x}, attrs)["out"], expected_order)
        same(run("nx.sort", {"x": x}, attrs)["out"], np.take_along_axis(x, expected_order, axis))
    out = run("nx.sort", {"x": np.array([2.0, NAN, -1.0, 5.0])}, {"axis": 0,
                                                                  "descending": descending})
    assert math.isnan(out["out"][-1])


def test_sort_integers_and_extremes():
    x = np.array([3, -(2**63), 2**63 - 1, 0, 3, -1])
    for descending in (False, True):
        order = run("nx.argsort", {"x": x}, {"axis": 0, "descending": descending})["out"]
        same(order, np.array(reference_order([float(v) for v in x.tolist()], descending)))
        same(run("nx.sort", {"x": x}, {"axis": 0, "descending": descending})["out"], x[order])


# ----------------------------------------------------------------------------- movement


def test_expand_reshape_permute(rng):
    x = rng.standard_normal((3, 1, 2))
    same(run("nx.expand", {"t": x}, {"shape": [3, 4, 2]})["out"], np.broadcast_to(x, (3, 4, 2)))
    same(run("nx.expand", {"t": np.array([[5]])}, {"shape": [1, 3]})["out"], np.full((1, 3), 5))
    with pytest.raises(Diagnostic, match="equal 'shape' or be 1"):
        run("nx.expand", {"t": x}, {"shape": [2, 4, 2]})
    y = np.arange(24).reshape(2, 3, 4)
    same(run("nx.reshape", {"t": y}, {"shape": [4, 6]})["out"], y.reshape(4, 6))
    same(run("nx.reshape", {"t": y}, {"shape": [24]})["out"], y.ravel())
    with pytest.raises(Diagnostic, match="as many elements"):
        run("nx.reshape", {"t": y}, {"shape": [5, 5]})
    for axes in ([2, 0, 1], [0, 1, 2], [1, 2, 0]):
        same(run("nx.permute", {"t": y}, {"axes": axes})["out"], np.transpose(y, axes))
    with pytest.raises(Diagnostic, match="distinct"):
        run("nx.permute", {"t": y}, {"axes": [0, 0, 1]})


def test_shrink_flip_pad_cat(rng):
    x = np.arange(20.0).reshape(4, 5)
    same(run("nx.shrink", {"t": x}, {"ranges": [1, 3, 0, 5]})["out"], x[1:3, 0:5])
    same(run("nx.shrink", {"t": x}, {"ranges": [2, 2, 4, 5]})["out"], x[2:2, 4:5])
    with pytest.raises(Diagnostic, match="start <= stop"):
        run("nx.shrink", {"t": x}, {"ranges": [3, 1, 0, 5]})
    for axes in ([True, False], [False, True], [True, True], [False, False]):
        flipped = np.flip(x, [i for i, f in enumerate(axes) if f]) if any(axes) else x
        same(run("nx.flip", {"t": x}, {"axes": axes})["out"], flipped)
    padded = run("nx.pad", {"t": x, "fill_value": np.array(-1.5)},
                 {"padding": [1, 0, 2, 3]})["out"]
    same(padded, np.pad(x, [(1, 0), (2, 3)], constant_values=-1.5))
    ints = np.arange(3)
    same(run("nx.pad", {"t": ints, "fill_value": np.array(9)}, {"padding": [2, 1]})["out"],
         np.array([9, 9, 0, 1, 2, 9]))
    with pytest.raises(Diagnostic, match="non-negative"):
        run("nx.pad", {"t": ints, "fill_value": np.array(0)}, {"padding": [-1, 0]})
    parts = [rng.standard_normal((2, k, 3)) for k in (1, 0, 4)]
    same(run("nx.cat", {"tensors": parts}, {"axis": 1})["out"], np.concatenate(parts, axis=1))
    same(run("nx.cat", {"tensors": [np.arange(2), np.arange(3)]}, {"axis": 0})["out"],
         np.array([0, 1, 0, 1, 2]))


# ----------------------------------------------------------------------------- cast


@pytest.mark.parametrize("profile", ["spec", "khronos"])
def test_cast_float_to_int_truncates_toward_zero(profile):
    """"Float-to-int truncates toward zero." -2.7 -> -2, 2.7 -> 2, -0.5 -> 0."""
    x = np.array([-2.7, 2.7, -0.5, 0.5, -0.0, 1e15 + 0.5, -3.0])
    out = run("nx.cast", {"x": x}, generics=("int",), profile=profile)["out"]
    same(out, np.array([math.trunc(v) for v in x]))
    assert out.dtype == np.int64


def test_cast_other_directions():
    ints = np.array([0, -3, 2**53 + 1])
    same(run("nx.cast", {"x": ints}, generics=("real",))["out"], ints.astype(np.float64))
    reals = np.array([0.0, -0.0, NAN, 2.0])
    same(run("nx.cast", {"x": reals}, generics=("bool",))["out"], np.array([False, False,
                                                                            True, True]))
    same(run("nx.cast", {"x": np.array([True, False])}, generics=("int",))["out"],
         np.array([1, 0]))
    with pytest.raises(Diagnostic, match="nan"):
        run("nx.cast", {"x": np.array([NAN])}, generics=("int",))


# ----------------------------------------------------------------------------- threefry


def threefry_reference(k0: int, k1: int, c0: int, c1: int) -> tuple[int, int]:
    """Threefry-2x32-20 in plain Python integers (mod 2^32), written from the Random123
    description: rotations R = 13 15 26 6 17 29 16 24, key words k0, k1, k0^k1^0x1BD11BDA,
    an injection of key words (s, s+1) mod 3 and the count s after every 4 rounds."""
    mask = 0xFFFFFFFF
    keys = [k0, k1, k0 ^ k1 ^ 0x1BD11BDA]
    rotations = [13, 15, 26, 6, 17, 29, 16, 24]
    x0, x1 = (c0 + keys[0]) & mask, (c1 + keys[1]) & mask
    for r in range(20):
        x0 = (x0 + x1) & mask
        rot = rotations[r % 8]
        x1 = ((x1 << rot) | (x1 >> (32 - rot))) & mask
        x1 ^= x0
        if r % 4 == 3:
            s = (r + 1) // 4
            x0 = (x0 + keys[s % 3]) & mask
            x1 = (x1 + keys[(s + 1) % 3] + s) & mask
    return x0, x1


def signed(word: int) -> int:
    return word - 2**32 if word >= 2**31 else word


def test_threefry_known_answers():
    """Random123's kat_vectors for threefry2x32_20 (counter, key -> result), as JAX tests."""
    cases = [((0x00000000, 0x00000000), (0x00000000, 0x00000000), (0x6B200159, 0x99BA4EFE)),
             ((0xFFFFFFFF, 0xFFFFFFFF), (0xFFFFFFFF, 0xFFFFFFFF), (0x1CB996FC, 0xBB002BE7)),
             ((0x243F6A88, 0x85A308D3), (0x13198A2E, 0x03707344), (0xC4923A9C, 0x483DF7A0))]
    counter = np.array([[signed(w) for w in c] for c, _, _ in cases])
    key = np.array([[signed(w) for w in k] for _, k, _ in cases])
    out = run("nx.threefry", {"key": key, "counter": counter})["out"]
    same(out, np.array([[signed(w) for w in r] for _, _, r in cases]))
    for c, k, r in cases:
        assert threefry_reference(*k, *c) == r


def test_threefry_against_a_python_reference(rng):
    key = rng.integers(-(2**31), 2**31, (3, 4, 2))
    counter = rng.integers(-(2**31), 2**31, (3, 4, 2))
    out = run("nx.threefry", {"key": key, "counter": counter})["out"]
    expected = np.empty_like(out)
    for index in np.ndindex(3, 4):
        k0, k1 = (int(v) & 0xFFFFFFFF for v in key[index])
        c0, c1 = (int(v) & 0xFFFFFFFF for v in counter[index])
        expected[index] = [signed(w) for w in threefry_reference(k0, k1, c0, c1)]
    same(out, expected)
    with pytest.raises(Diagnostic, match="int32 range"):
        run("nx.threefry", {"key": np.array([[2**31, 0]]), "counter": np.array([[0, 0]])})


# ----------------------------------------------------------------------------- gather, scatter


def test_gather(rng):
    data = rng.standard_normal((3, 4, 2))
    for axis in range(3):
        shape = list(data.shape)
        shape[axis] = 5
        indices = rng.integers(0, data.shape[axis], shape)
        out = run("nx.gather", {"data": data, "indices": indices}, {"axis": axis})["out"]
        same(out, np.take_along_axis(data, indices, axis))
    small = rng.integers(0, 4, (2, 3, 1))  # other extents smaller than data's
    same(run("nx.gather", {"data": data, "indices": small}, {"axis": 1})["out"],
         np.take_along_axis(data[:2, :, :1], small, 1))
    with pytest.raises(Diagnostic, match="out of range"):
        run("nx.gather", {"data": data, "indices": np.full((3, 1, 2), 4)}, {"axis": 1})
    with pytest.raises(Diagnostic, match="must not exceed"):
        run("nx.gather", {"data": data, "indices": np.zeros((4, 1, 2), dtype=int)}, {"axis": 1})


def scatter_reference(template, indices, updates, axis, add):
    out = template.copy()
    for index in np.ndindex(*indices.shape):  # row-major: the last update wins for Set
        target = list(index)
        target[axis] = indices[index]
        if add:
            out[tuple(target)] += updates[index]
        else:
            out[tuple(target)] = updates[index]
    return out


@pytest.mark.parametrize("mode", ["Set", "Add"])
def test_scatter_last_write_wins_or_accumulates(rng, mode):
    template = rng.standard_normal((3, 4))
    indices = np.array([[1, 1, 3], [0, 2, 0], [3, 3, 3]])  # duplicates along axis 1
    updates = rng.standard_normal((3, 3))
    for unique in (False, True):
        out = run("nx.scatter", {"template": template, "indices": indices, "updates": updates},
                  {"axis": 1, "mode": mode, "unique_indices": unique})["out"]
        np.testing.assert_allclose(out, scatter_reference(template, indices, updates, 1,
                                                          mode == "Add"), rtol=1e-15)
    hand = run("nx.scatter", {"template": np.zeros(3), "indices": np.array([2, 2, 0]),
                              "updates": np.array([1.0, 5.0, 7.0])}, {"axis": 0, "mode": mode})
    same(hand["out"], np.array([7.0, 0.0, 5.0 if mode == "Set" else 6.0]))
    ints = run("nx.scatter", {"template": np.arange(4), "indices": np.array([[1], [1]]).ravel(),
                              "updates": np.array([10, 20])}, {"axis": 0, "mode": mode})["out"]
    same(ints, np.array([0, 20 if mode == "Set" else 31, 2, 3]))


def test_scatter_default_mode_is_set_and_axis0(rng):
    template = np.zeros((2, 3))
    indices = np.array([[1, 0, 1], [1, 0, 1]])
    updates = np.arange(6.0).reshape(2, 3)
    out = run("nx.scatter", {"template": template, "indices": indices, "updates": updates},
              {"axis": 0})["out"]
    same(out, scatter_reference(template, indices, updates, 0, False))
    with pytest.raises(Diagnostic, match="'mode' must be one of"):
        run("nx.scatter", {"template": template, "indices": indices, "updates": updates},
            {"axis": 0, "mode": "Max"})


# ----------------------------------------------------------------------------- unfold, fold


def window_geometry(spatial, kernel, stride, dilation, padding):
    before, after = padding[::2], padding[1::2]
    counts = [(n + b + a - d * (k - 1) - 1) // s + 1
              for n, k, s, d, b, a in zip(spatial, kernel, stride, dilation, before, after)]
    return before, counts


def unfold_reference(x, kernel, stride, dilation, padding):
    K = len(kernel)
    lead, spatial = x.shape[:-K], x.shape[-K:]
    before, counts = window_geometry(spatial, kernel, stride, dilation, padding)
    out = np.zeros(lead + (int(np.prod(kernel)), int(np.prod(counts))), dtype=x.dtype)
    for row, tap in enumerate(np.ndindex(*kernel)):
        for col, window in enumerate(np.ndindex(*counts)):
            pos = [w * s + t * d - b for w, t, s, d, b in zip(window, tap, stride, dilation,
                                                                before)]
            if all(0 <= p < n for p, n in zip(pos, spatial)):
                out[..., row, col] = x[(...,) + tuple(pos)]
    return out


def fold_reference(y, output_size, kernel, stride, dilation, padding):
    before, counts = window_geometry(output_size, kernel, stride, dilation, padding)
    out = np.zeros(y.shape[:-2] + tuple(output_size), dtype=y.dtype)
    for row, tap in enumerate(np.ndindex(*kernel)):
        for col, window in enumerate(np.ndindex(*counts)):
            pos = [w * s + t * d - b for w, t, s, d, b in zip(window, tap, stride, dilation,
                                                                before)]
            if all(0 <= p < n for p, n in zip(pos, output_size)):
                out[(...,) + tuple(pos)] += y[..., row, col]
    return out


GEOMETRIES = [  # kernel, stride, dilation, padding, spatial
    ([2, 2], [1, 1], [1, 1], [0, 0, 0, 0], [3, 4]),
    ([3, 2], [2, 1], [1, 2], [1, 1, 0, 2], [5, 4]),
    ([3], [2], [1], [2, 1], [6]),
    ([2, 1, 2], [1, 1, 2], [1, 1, 1], [0, 1, 0, 0, 1, 0], [2, 3, 4]),
]


@pytest.mark.parametrize("kernel, stride, dilation, padding, spatial", GEOMETRIES)
def test_unfold_and_fold(rng, kernel, stride, dilation, padding, spatial):
    attrs = {"kernel_size": kernel, "stride": stride, "dilation": dilation, "padding": padding}
    x = rng.standard_normal((2, *spatial))
    out = run("nx.unfold", {"t": x}, attrs)["out"]
    same(out, unfold_reference(x, kernel, stride, dilation, padding))
    y = rng.standard_normal(out.shape)
    folded = run("nx.fold", {"t": y}, attrs | {"output_size": spatial})["out"]
    np.testing.assert_allclose(folded, fold_reference(y, spatial, kernel, stride, dilation,
                                                      padding), rtol=1e-14)
    # fold is the adjoint of unfold: <unfold x, y> = <x, fold y>
    assert np.vdot(out, y) == pytest.approx(np.vdot(x, folded), rel=1e-12)


def test_fold_sums_overlaps_and_unfold_keeps_leading_dimensions():
    ones = np.ones((1, 4, 8))  # 2x2 kernel, stride 1 over a 3x5 output: 2x4 windows
    attrs = {"output_size": [3, 5], "kernel_size": [2, 2], "stride": [1, 1],
             "dilation": [1, 1], "padding": [0, 0, 0, 0]}
    same(run("nx.fold", {"t": ones}, attrs)["out"],
         np.array([[[1.0, 2, 2, 2, 1], [2, 4, 4, 4, 2], [1, 2, 2, 2, 1]]]))
    x = np.arange(2 * 3 * 1 * 5).reshape(2, 3, 1, 5)  # ints, two leading dimensions
    out = run("nx.unfold", {"t": x}, {"kernel_size": [1, 2], "stride": [1, 2],
                                      "dilation": [1, 1], "padding": [0, 0, 0, 0]})["out"]
    assert out.shape == (2, 3, 2, 2)
    same(out, unfold_reference(x, [1, 2], [1, 2], [1, 1], [0, 0, 0, 0]))
    with pytest.raises(Diagnostic, match="prod\\(kernel_size\\) rows"):
        run("nx.fold", {"t": np.ones((1, 4, 6))}, attrs)
    with pytest.raises(Diagnostic, match="positive"):
        run("nx.unfold", {"t": x}, {"kernel_size": [1, 0], "stride": [1, 1],
                                    "dilation": [1, 1], "padding": [0, 0, 0, 0]})


# ----------------------------------------------------------------------------- matmul


@pytest.mark.parametrize("a_shape, b_shape", [((3, 4), (4, 2)), ((2, 3, 4), (4, 5)),
                                              ((2, 1, 3, 4), (5, 4, 2)), ((1, 2, 2), (3, 2, 1)),
                                              ((3, 0), (0, 2))])
def test_matmul_broadcasts_batches(rng, a_shape, b_shape):
    a, b = rng.standard_normal(a_shape), rng.standard_normal(b_shape)
    np.testing.assert_allclose(run("nx.matmul", {"a": a, "b": b})["out"], np.matmul(a, b),
                               rtol=1e-13, atol=1e-15)
    p, q = rng.integers(-5, 5, a_shape), rng.integers(-5, 5, b_shape)
    same(run("nx.matmul", {"a": p, "b": q})["out"], np.matmul(p, q))


def test_matmul_checks_shapes():
    with pytest.raises(Diagnostic, match="last dimension"):
        run("nx.matmul", {"a": np.zeros((2, 3)), "b": np.zeros((4, 2))})
    with pytest.raises(Diagnostic, match="broadcast"):
        run("nx.matmul", {"a": np.zeros((2, 2, 3)), "b": np.zeros((3, 3, 2))})


# ----------------------------------------------------------------------------- FFT


def dft_matrix(n: int, inverse: bool) -> np.ndarray:
    j = np.arange(n)
    sign = 1.0 if inverse else -1.0
    return np.exp(sign * 2j * np.pi * np.outer(j, j) / n) / (n if inverse else 1)


def dft(x: np.ndarray, axes: list[int], inverse: bool = False) -> np.ndarray:
    """The DFT written as matrix products, one axis after another (no numpy.fft)."""
    for axis in axes:
        x = np.moveaxis(np.tensordot(dft_matrix(x.shape[axis], inverse), np.moveaxis(
            x, axis, 0), axes=1), 0, axis)
    return x


def as_pairs(z: np.ndarray) -> np.ndarray:
    return np.stack([z.real, z.imag], axis=-1)


@pytest.mark.parametrize("axes", [[0], [1], [0, 1], [1, 0], []])
def test_fft_and_ifft(rng, axes):
    z = rng.standard_normal((4, 5)) + 1j * rng.standard_normal((4, 5))
    out = run("nx.fft", {"t": as_pairs(z)}, {"axes": axes})["out"]
    np.testing.assert_allclose(out, as_pairs(dft(z, axes)), atol=1e-12)
    back = run("nx.ifft", {"t": out}, {"axes": axes})["out"]
    np.testing.assert_allclose(back, as_pairs(z), atol=1e-12)
    np.testing.assert_allclose(run("nx.ifft", {"t": as_pairs(z)}, {"axes": axes})["out"],
                               as_pairs(dft(z, axes, inverse=True)), atol=1e-12)


@pytest.mark.parametrize("shape, axes", [((6,), [0]), ((5,), [0]), ((3, 4), [0, 1]),
                                         ((4, 3), [1, 0]), ((2, 3, 4), [2])])
def test_rfft_and_irfft(rng, shape, axes):
    x = rng.standard_normal(shape)
    out = run("nx.rfft", {"t": x}, {"axes": axes})["out"]
    last = axes[-1]
    full = dft(x.astype(complex), axes)
    expected = np.take(full, np.arange(shape[last] // 2 + 1), axis=last)
    np.testing.assert_allclose(out, as_pairs(expected), atol=1e-12)
    back = run("nx.irfft", {"t": out}, {"axes": axes, "s": [shape[a] for a in axes]})["out"]
    np.testing.assert_allclose(back, x, atol=1e-12)
    if shape[last] % 2 == 0:  # without s: 2 (m - 1) values along the last axis
        np.testing.assert_allclose(run("nx.irfft", {"t": out}, {"axes": axes})["out"], x,
                                   atol=1e-12)


def test_irfft_hand_values_and_ignored_imaginary_parts():
    spectrum = np.array([[6.0, 5.0], [-2.0, 2.0], [-2.0, 7.0]])  # DC and Nyquist imag ignored
    out = run("nx.irfft", {"t": spectrum}, {"axes": [0]})["out"]
    np.testing.assert_allclose(out, [0.0, 1.0, 2.0, 3.0], atol=1e-15)
    with pytest.raises(Diagnostic, match="distinct"):
        run("nx.fft", {"t": np.zeros((2, 2))}, {"axes": [0, 0]})


# ----------------------------------------------------------------------------- linear algebra


def spd(rng, shape):
    m = rng.standard_normal(shape)
    return m @ np.swapaxes(m, -1, -2) + shape[-1] * np.eye(shape[-1])


def test_cholesky(rng):
    a = spd(rng, (2, 4, 4))
    garbage = a + np.triu(rng.standard_normal((4, 4)), 1)  # only the lower triangle is read
    lower = run("nx.cholesky", {"t": garbage})["out"]
    assert np.allclose(np.triu(lower, 1), 0) and np.all(np.diagonal(lower, 0, -2, -1) > 0)
    np.testing.assert_allclose(lower @ np.swapaxes(lower, -1, -2), a, rtol=1e-12)
    upper = run("nx.cholesky", {"t": a}, {"upper": True})["out"]
    np.testing.assert_allclose(upper, np.swapaxes(lower, -1, -2), rtol=1e-12)
    np.testing.assert_allclose(np.swapaxes(upper, -1, -2) @ upper, a, rtol=1e-12)
    same(run("nx.cholesky", {"t": np.array([[4.0, 0.0], [2.0, 5.0]])})["out"],
         np.array([[2.0, 0.0], [1.0, 2.0]]))
    with pytest.raises(Diagnostic, match="positive definite"):
        run("nx.cholesky", {"t": np.array([[1.0, 2.0], [2.0, 1.0]])})


@pytest.mark.parametrize("shape", [(4, 3), (3, 4), (2, 3, 3)])
@pytest.mark.parametrize("reduced", [True, False])
def test_qr(rng, shape, reduced):
    a = rng.standard_normal(shape)
    out = run("nx.qr", {"t": a}, {"reduced": reduced})
    q, r = out["q"], out["r"]
    m, n = shape[-2:]
    k = min(m, n) if reduced else m
    assert q.shape == shape[:-2] + (m, k) and r.shape == shape[:-2] + (k, n)
    np.testing.assert_allclose(q @ r, a, atol=1e-12)
    np.testing.assert_allclose(np.swapaxes(q, -1, -2) @ q, np.broadcast_to(np.eye(k), q.shape[
        :-2] + (k, k)), atol=1e-12)
    assert np.allclose(np.tril(r, -1), 0)
    assert np.all(np.diagonal(r, 0, -2, -1)[..., :min(m, n)] >= 0)  # canonical signs


@pytest.mark.parametrize("shape", [(4, 3), (3, 4), (2, 3, 3)])
@pytest.mark.parametrize("full", [False, True])
def test_svd(rng, shape, full):
    a = rng.standard_normal(shape)
    out = run("nx.svd", {"t": a}, {"full_matrices": full})
    u, s, vh = out["u"], out["s"], out["vh"]
    m, n = shape[-2:]
    k = min(m, n)
    assert s.shape == shape[:-2] + (k,)
    assert np.all(np.diff(s, axis=-1) <= 0) and np.all(s >= 0)
    np.testing.assert_allclose((u[..., :, :k] * s[..., None, :]) @ vh[..., :k, :], a,
                               atol=1e-12)
    assert u.shape[-1] == (m if full else k) and vh.shape[-2] == (n if full else k)
    # canonical signs: the largest-magnitude entry of each of the first k columns of U > 0
    columns = u[..., :, :k]
    pivot = np.take_along_axis(columns, np.argmax(np.abs(columns), axis=-2)[..., None, :], -2)
    assert np.all(pivot > 0)
    expected = np.sqrt(np.sort(np.linalg.eigvalsh(np.swapaxes(a, -1, -2) @ a), axis=-1)[
        ..., ::-1][..., :k].clip(0))
    np.testing.assert_allclose(s, expected, atol=1e-10)


def test_eig(rng):
    rotation = np.array([[0.0, -1.0], [1.0, 0.0]])
    out = run("nx.eig", {"t": rotation})
    np.testing.assert_allclose(out["w"], [[0.0, -1.0], [0.0, 1.0]], atol=1e-15)  # -i, then +i
    a = rng.standard_normal((2, 4, 4))
    out = run("nx.eig", {"t": a})
    w = out["w"][..., 0] + 1j * out["w"][..., 1]
    v = out["v"][..., 0] + 1j * out["v"][..., 1]
    np.testing.assert_allclose(a @ v, v * w[..., None, :], atol=1e-10)
    np.testing.assert_allclose(np.linalg.norm(v, axis=-2), 1.0, rtol=1e-12)
    keys = np.round(w.real, 9) + 0j
    assert np.all(np.diff(keys.real, axis=-1) >= 0)  # ascending real parts
    pivot = np.take_along_axis(v, np.argmax(np.abs(v), axis=-2)[..., None, :], -2)
    np.testing.assert_allclose(pivot.imag, 0, atol=1e-12)
    assert np.all(pivot.real > 0)
    assert run("nx.eig", {"t": a}, {"vectors": False})["v"].shape == (2, 0, 0, 2)


def test_eigh(rng):
    a = spd(rng, (3, 3)) - 5 * np.eye(3)
    garbage = a + np.triu(rng.standard_normal((3, 3)), 1)  # only the lower triangle is read
    out = run("nx.eigh", {"t": garbage})
    w, v = out["w"], out["v"]
    np.testing.assert_allclose(w, np.sort(np.linalg.eigvals(a).real), rtol=1e-10)
    np.testing.assert_allclose(a @ v, v * w, atol=1e-10)
    np.testing.assert_allclose(v.T @ v, np.eye(3), atol=1e-12)
    pivot = np.take_along_axis(v, np.argmax(np.abs(v), axis=0)[None, :], 0)
    assert np.all(pivot > 0)
    only = run("nx.eigh", {"t": a}, {"vectors": False})
    np.testing.assert_allclose(only["w"], w, rtol=1e-12)
    assert only["v"].shape == (0, 0)


@pytest.mark.parametrize("upper", [False, True])
@pytest.mark.parametrize("transpose", [False, True])
@pytest.mark.parametrize("unit_diag", [False, True])
def test_triangular_solve(rng, upper, transpose, unit_diag):
    a = rng.standard_normal((2, 4, 4)) + 4 * np.eye(4)
    b = rng.standard_normal((2, 4, 3))
    x = run("nx.triangular_solve", {"a": a, "b": b},
            {"upper": upper, "transpose": transpose, "unit_diag": unit_diag})["x"]
    tri = np.triu(a) if upper else np.tril(a)
    if unit_diag:
        tri = tri - np.diagonal(tri, 0, -2, -1)[..., None] * np.eye(4) + np.eye(4)
    if transpose:
        tri = np.swapaxes(tri, -1, -2)
    np.testing.assert_allclose(tri @ x, b, atol=1e-12)
    np.testing.assert_allclose(x, np.linalg.solve(tri, b), rtol=1e-10, atol=1e-12)


def test_triangular_solve_hand_values():
    a = np.array([[2.0, 99.0], [1.0, 1.0]])  # lower: the 99 is never read
    out = run("nx.triangular_solve", {"a": a, "b": np.array([[2.0], [3.0]])})["x"]
    same(out, np.array([[1.0], [2.0]]))


@pytest.mark.parametrize("op, attributes", [("nx.svd", {}), ("nx.eig", {"vectors": True}),
                                            ("nx.eigh", {"vectors": True})])
def test_decompositions_of_non_finite_matrices_are_nan(op, attributes):
    """A matrix holding NaN or an infinity decomposes to NaN in every output of its own (as
    XLA, Nx's compiler, gives; LAPACK does not converge), never an internal error; the other
    matrices of the batch are unaffected. eigh reads the lower triangle only."""
    finite = np.array([[2.0, 1.0], [1.0, 3.0]])
    t = np.stack([finite, [[np.nan, 1.0], [1.0, 3.0]], [[1.0, 0.0], [np.inf, 1.0]]])
    out = run(op, {"t": t}, attributes)
    alone = run(op, {"t": finite}, attributes)
    for name, value in out.items():
        np.testing.assert_array_equal(value[0], alone[name])
        assert np.isnan(value[1]).all() and np.isnan(value[2]).all()
    if op == "nx.eigh":  # an infinity above the diagonal is not read
        upper = run(op, {"t": np.array([[2.0, np.inf], [1.0, 3.0]])}, attributes)
        np.testing.assert_allclose(upper["w"], np.linalg.eigvalsh(finite), rtol=1e-14)
