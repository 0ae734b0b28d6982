"""Module `math` (spec §4.2.6 reductions, and cumsum): every operator against NumPy.

Reduced axes are kept as extent 1 unless `squeeze`; `axes` defaults to every axis and may be
negative; argmin/argmax pick the first index among equal values.
"""

from __future__ import annotations

import numpy as np
import pytest

from refinterp.core.diagnostics import Diagnostic

from .conftest import run

CASES = [({}, (0, 1, 2), False), ({"axes": [1]}, (1,), False),
         ({"axes": [-1, 0], "squeeze": True}, (0, 2), True)]


def reduce(function, x, axes, squeeze):
    return function(x, axis=axes, keepdims=not squeeze)


@pytest.mark.parametrize("attributes, axes, squeeze", CASES)
def test_numeric_reductions(attributes, axes, squeeze, rng):
    x = rng.standard_normal((2, 3, 4))
    for name, function in [("min_reduce", np.min), ("max_reduce", np.max),
                           ("sum_reduce", np.sum), ("prod_reduce", np.prod),
                           ("mean_reduce", np.mean)]:
        out = run(f"math.{name}", {"input": x}, attributes)["output"]
        np.testing.assert_allclose(out, reduce(function, x, axes, squeeze), rtol=1e-13)
    ints = rng.integers(-4, 5, (2, 3, 4))
    for name, function in [("min_reduce", np.min), ("max_reduce", np.max),
                           ("sum_reduce", np.sum), ("prod_reduce", np.prod)]:
        out = run(f"math.{name}", {"input": ints}, attributes)["output"]
        assert out.dtype == np.int64
        assert np.array_equal(out, reduce(function, ints, axes, squeeze))


@pytest.mark.parametrize("p", [1.0, 2.0, 3.0])
@pytest.mark.parametrize("attributes, axes, squeeze", CASES)
def test_lp_reduce(p, attributes, axes, squeeze, rng):
    x = rng.standard_normal((2, 3, 4))
    out = run("math.lp_reduce", {"input": x}, {**attributes, "p": p})["output"]
    expected = reduce(np.sum, np.abs(x) ** p, axes, squeeze) ** (1.0 / p)
    np.testing.assert_allclose(out, expected, rtol=1e-13)


@pytest.mark.parametrize("attributes, axes, squeeze", CASES)
def test_logical_reductions(attributes, axes, squeeze, rng):
    b = rng.random((2, 3, 4)) < 0.7
    assert np.array_equal(run("math.any_reduce", {"input": b}, attributes)["output"],
                          reduce(np.any, b, axes, squeeze))
    assert np.array_equal(run("math.all_reduce", {"input": b}, attributes)["output"],
                          reduce(np.all, b, axes, squeeze))


@pytest.mark.parametrize("attributes, axes, squeeze", CASES)
def test_moments(attributes, axes, squeeze, rng):
    x = rng.standard_normal((2, 3, 4))
    out = run("math.moments", {"input": x}, attributes)
    np.testing.assert_allclose(out["mean"], reduce(np.mean, x, axes, squeeze), rtol=1e-13)
    np.testing.assert_allclose(out["variance"], reduce(np.var, x, axes, squeeze), rtol=1e-12)


def test_reduction_axes_are_checked():
    with pytest.raises(Diagnostic, match="'axes' must be between"):
        run("math.sum_reduce", {"input": np.zeros((2, 3))}, {"axes": [2]})
    with pytest.raises(Diagnostic, match="distinct"):
        run("math.sum_reduce", {"input": np.zeros((2, 3))}, {"axes": [1, 1]})
    # 1 and -1 name one axis: distinct only as written, so not distinct (docs/stdlib.md)
    with pytest.raises(Diagnostic, match="distinct"):
        run("math.sum_reduce", {"input": np.zeros((2, 3))}, {"axes": [1, -1]})


@pytest.mark.parametrize("axis, squeeze", [(0, False), (-1, True), (1, False)])
def test_argmin_argmax(axis, squeeze, rng):
    x = rng.standard_normal((3, 4, 5))
    x[0, 0, :2] = x[0, 0, 2]  # ties: the first index wins
    x[:2, 1, 1] = x[2, 1, 1]
    for name, function in [("argmin", np.argmin), ("argmax", np.argmax)]:
        out = run(f"math.{name}", {"input": x}, {"axis": axis, "squeeze": squeeze})["output"]
        expected = function(x, axis=axis)
        if not squeeze:
            expected = np.expand_dims(expected, axis)
        assert np.array_equal(out, expected)


def argnd(x: np.ndarray, axes: tuple[int, ...], function) -> list[np.ndarray]:
    """Per kept position, the multi-index (row-major first on ties) over `axes`, as one
    index tensor per axis, the reduced axes kept as extent 1."""
    moved = np.moveaxis(x, axes, range(-len(axes), 0))
    kept = moved.shape[:-len(axes)]
    flat = function(moved.reshape(*kept, -1), axis=-1)
    coordinates = np.unravel_index(flat, [x.shape[a] for a in axes])
    result = []
    for c in coordinates:
        full = c.reshape(kept)
        for a in sorted(axes):
            full = np.expand_dims(full, a)
        result.append(full)
    return result


@pytest.mark.parametrize("axes", [(2, 3), (1,), (0, 2)])
def test_argmin_nd_argmax_nd(axes, rng):
    """Spec §4.2.6: one int tensor per reduced axis (a pack); the Khronos stdlib instead
    stacks them on a trailing axis (docs/stdlib.md)."""
    x = rng.standard_normal((2, 3, 4, 5))
    x[0, 0, 1, 1] = x[0, 0].min() - 1
    x[0, 0, 2, 3] = x[0, 0, 1, 1]  # a tie: the first in row-major order wins
    for name, function in [("argmin_nd", np.argmin), ("argmax_nd", np.argmax)]:
        out = run(f"math.{name}", {"input": x}, {"axes": list(axes)})["output"]
        expected = argnd(x, axes, function)
        assert len(out) == len(axes)
        for got, want in zip(out, expected):
            assert np.array_equal(got, want)
    squeezed = run("math.argmax_nd", {"input": x}, {"axes": list(axes), "squeeze": True})
    for got, want in zip(squeezed["output"], argnd(x, axes, np.argmax)):
        assert np.array_equal(got, np.squeeze(want, axis=axes))


@pytest.mark.parametrize("axis", [0, 1, -1])
@pytest.mark.parametrize("exclusive", [False, True])
@pytest.mark.parametrize("reverse", [False, True])
def test_cumsum(axis, exclusive, reverse, rng):
    x = rng.standard_normal((3, 4))
    y = np.flip(x, axis) if reverse else x
    expected = np.cumsum(y, axis=axis)
    if exclusive:
        expected = expected - y
    if reverse:
        expected = np.flip(expected, axis)
    out = run("math.cumsum", {"input": x},
              {"axis": axis, "exclusive": exclusive, "reverse": reverse})["output"]
    np.testing.assert_allclose(out, expected, rtol=1e-12, atol=1e-15)


def test_cumsum_axis_is_checked():
    with pytest.raises(Diagnostic, match="'axis' must be between"):
        run("math.cumsum", {"input": np.zeros((2, 3))}, {"axis": 2})
