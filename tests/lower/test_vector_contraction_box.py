"""A contraction runs as one box when what it allocates fits the memory budget
(docs/performance.md "The vector engine", bullets "Memory" and "Summation order").

- `vector.space.contraction_box`: a `+=` of a product of tensor accesses is planned by what
  a contraction really allocates (each factor's own axes, the output cells), not 48 bytes
  per iteration; a box that turns out not to be a contraction is boxed again as any formula,
  before anything is written.
- `vector.sums.unsettled`: the cheaper form of the test "fits half the engines'
  tolerance" never accepts a cell the plain form rejects, and never accepts an infinite sum.

Expected values come from NumPy code in this file, never from refinterp.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from numpy.lib.stride_tricks import sliding_window_view

from refinterp.lower.vector import engine as V
from refinterp.lower.vector import sums

from testsupport.vector_cases import op, vectorised

RNG = np.random.default_rng(2111)


# ----------------------------------------------------------------- one box for a contraction


def _count_boxes(monkeypatch) -> list[tuple]:
    boxes: list[tuple] = []
    original = V.VectorFormula.run_box

    def counting(self, box, stores, *args, **kwargs):
        boxes.append((self.formula.op, box.shape))
        return original(self, box, stores, *args, **kwargs)

    monkeypatch.setattr(V.VectorFormula, "run_box", counting)
    return boxes


CONV = op("x: real[1, 8, 12, 12]; w: real[16, 8, 3, 3];", "y: real[1, 16, 10, 10];",
          "y[b, o, i, j] += x[b, c, i + p, j + q] * w[o, c, p, q], "
          "b < 1, o < 16, c < 8, i < 10, j < 10, p < 3, q < 3;")


def _numpy_conv(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    windows = sliding_window_view(x, (3, 3), axis=(2, 3))  # b c i j p q
    return np.einsum("bcijpq,ocpq->boij", windows, w)


def test_a_convolution_larger_than_the_iteration_budget_runs_as_one_box(monkeypatch):
    """115,200 iterations at 48 bytes would need 5.5 MB; with a 1 MB budget the iteration
    estimate cuts the formula into boxes, but its factors and output cells fit: one box."""
    x, w = RNG.standard_normal((1, 8, 12, 12)), RNG.standard_normal((16, 8, 3, 3))
    boxes = _count_boxes(monkeypatch)
    out = vectorised(CONV, {"x": x, "w": w}, max_memory=2 ** 20)["y"]
    np.testing.assert_allclose(out, _numpy_conv(x, w), rtol=1e-12, atol=1e-12)
    assert [shape for formula_op, shape in boxes if formula_op == "+="][-1] == \
        (1, 16, 8, 10, 10, 3, 3)


def test_a_contraction_that_does_not_fit_is_boxed_as_before(monkeypatch):
    """Even its factors exceed a 16 KB budget: the iteration estimate's boxes, same values."""
    x, w = RNG.standard_normal((1, 8, 12, 12)), RNG.standard_normal((16, 8, 3, 3))
    boxes = _count_boxes(monkeypatch)
    out = vectorised(CONV, {"x": x, "w": w}, max_memory=2 ** 14)["y"]
    np.testing.assert_allclose(out, _numpy_conv(x, w), rtol=1e-12, atol=1e-12)
    assert len([1 for formula_op, _ in boxes if formula_op == "+="]) > 2


def test_a_product_that_is_no_contraction_is_boxed_again_before_writing(monkeypatch):
    """A guarded factor reading padding with an infinity among the factors is no contraction
    (0 * inf would add a nan): the one box is abandoned before it writes, the formula is
    boxed by the iteration estimate, and each skipped iteration adds nothing."""
    x = RNG.standard_normal((4, 6))
    x[1, 2] = np.inf
    w = RNG.standard_normal((5, 3))
    text = op("x: real[4, 6]; w: real[5, 3];", "y: real[4, 5];",
              "y[i, o] += x[i, |j + k - 1|] * w[o, k], i < 4, o < 5, j < 6, k < 3;")
    boxes = _count_boxes(monkeypatch)
    out = vectorised(text, {"x": x, "w": w}, max_memory=2 ** 13)["y"]
    expected = np.zeros((4, 5))
    for i in range(4):
        for o in range(5):
            total = 0.0
            for j in range(6):
                for k in range(3):
                    if 0 <= j + k - 1 < 6:
                        with np.errstate(invalid="ignore"):
                            total += x[i, j + k - 1] * w[o, k]
            expected[i, o] = total
    np.testing.assert_allclose(out, expected, rtol=1e-12)
    shapes = [shape for formula_op, shape in boxes if formula_op == "+="]
    assert shapes[0] == (4, 5, 6, 3)  # the one box tried first (about 6 KB)
    assert len(shapes) > 2  # then the iteration estimate's boxes (360 iterations > 170)


def test_a_conditional_product_is_not_planned_as_a_contraction(monkeypatch):
    a, b = RNG.standard_normal((6, 7)), RNG.standard_normal((7, 5))
    text = op("a: real[6, 7]; b: real[7, 5];", "z: real[6, 5];",
              "z[i, j] += a[i, k] * b[k, j], i < 6, j < 5, k < 7 | k != 3;")
    boxes = _count_boxes(monkeypatch)
    out = vectorised(text, {"a": a, "b": b}, max_memory=2 ** 12)["z"]
    keep = np.arange(7) != 3
    np.testing.assert_allclose(out, a[:, keep] @ b[keep], rtol=1e-12)
    assert len([1 for formula_op, _ in boxes if formula_op == "+="]) > 1


# ----------------------------------------------------------------- the tolerance test


def _fits_exactly(error: float, new: float) -> bool:
    """error <= 0.5 * (atol + rtol * |new|) in exact rational arithmetic."""
    return Fraction(error) <= Fraction(1, 2) * (
        Fraction(sums.REAL_ATOL) + Fraction(sums.REAL_RTOL) * abs(Fraction(new)))


def test_the_tolerance_test_never_accepts_what_the_plain_test_rejects():
    new = np.concatenate([RNG.standard_normal(2000) * 10.0 ** RNG.integers(-20, 20, 2000),
                          [0.0, -0.0, 1e-300, 5e-324, 1.7e308]])
    allowed = 0.5 * (sums.REAL_ATOL + sums.REAL_RTOL * np.abs(new))
    # errors right at the boundary, a little inside and outside it
    error = np.concatenate([allowed * (1 + 1e-15), allowed, allowed * (1 - 1e-15),
                            allowed * (1 - 1e-13)])
    news = np.tile(new, 4)
    bad = set(sums.unsettled(error.copy(), news).tolist())
    for k, (e, n) in enumerate(zip(error, news)):
        if k not in bad:
            assert _fits_exactly(float(e), float(n)), (e, n)
    # and it is not much stricter: cells well inside are accepted
    inside = sums.unsettled(allowed * 0.999, new.copy())
    assert inside.size == 0


def test_an_infinite_or_nan_sum_is_never_settled():
    new = np.array([np.inf, -np.inf, 1.0, np.nan, 2.0])
    error = np.array([0.0, 0.0, 0.0, 0.0, np.nan])
    assert sums.unsettled(error, new).tolist() == [0, 1, 3, 4]


def test_an_overflowing_fast_sum_is_summed_again_in_order():
    """Terms whose pairwise sum overflows while the in-order sum does not: the definition's
    value, not inf."""
    big = 1.5e308
    x = np.array([[big, -big, big, 1.0]])
    out = vectorised(op("x: real[1, 4];", "y: real[1];",
                        "y[i] += x[i, k], i < 1, k < 4;"), {"x": x})["y"]
    expected = ((big + -big) + big) + 1.0
    assert out[0] == expected


# ----------------------------------------------------------------- sums of squares of windows


def _windows(x: np.ndarray, size: int, stride: int = 1, dilation: int = 1) -> np.ndarray:
    """b c h w i j windows of an NCHW array, as strided views of it (NumPy written here)."""
    b, c, height, width = x.shape
    span = dilation * (size - 1) + 1
    out_h, out_w = (height - span) // stride + 1, (width - span) // stride + 1
    sb, sc, sh, sw = x.strides
    return np.lib.stride_tricks.as_strided(
        x, (b, c, out_h, out_w, size, size),
        (sb, sc, stride * sh, stride * sw, dilation * sh, dilation * sw), writeable=False)


@pytest.mark.parametrize("stride, dilation", [(1, 1), (2, 1), (1, 2), (4, 1)])
def test_window_sums_of_squares_equal_einsums(stride, dilation):
    """Summing the channel on the input first, then the taps on a view of the result, gives
    the windows' sums of squares (up to the order of the additions)."""
    x = RNG.standard_normal((2, 5, 17, 19))
    windows = _windows(x, 3, stride, dilation)
    # the cheaper path where windows overlap (stride below the size); where they do not,
    # no element is read twice and einsum stands
    assert (sums.square_sums(windows, "bchwij", "bhw") is not None) == (stride < 3)
    np.testing.assert_allclose(sums.sum_of_squares(windows, "bchwij", "bhw"),
                               np.einsum("bchwij,bchwij->bhw", windows, windows), rtol=1e-13)


def test_window_sums_of_squares_of_a_part_and_a_flipped_input():
    x = RNG.standard_normal((1, 6, 20, 20))
    for part in (x[:, 1:5, 2:14, 3:], x[:, ::-1, ::-1, :]):
        windows = _windows(part, 2)
        np.testing.assert_allclose(sums.sum_of_squares(windows, "bchwij", "bhw"),
                                   np.einsum("bchwij,bchwij->bhw", windows, windows),
                                   rtol=1e-13)


@pytest.mark.parametrize("keep", ["bchw", "bhwij", "b"])
def test_sums_of_squares_keeping_other_letters(keep):
    x = RNG.standard_normal((1, 4, 9, 9))
    windows = _windows(x, 3)
    np.testing.assert_allclose(sums.sum_of_squares(windows, "bchwij", keep),
                               np.einsum(f"bchwij,bchwij->{keep}", windows, windows),
                               rtol=1e-13)


def test_plain_arrays_take_einsum():
    w = RNG.standard_normal((7, 11))
    assert sums.square_sums(w, "oc", "o") is None and sums.square_sums(w.T, "co", "o") is None
    np.testing.assert_allclose(sums.sum_of_squares(w, "oc", "o"), (w * w).sum(axis=1))


def test_a_guarded_output_position_is_not_planned_as_a_contraction(monkeypatch):
    """A transposed convolution's positions `|2 * i + k - 1|` meet: its taps are boxed by
    `plan_boxes` directly, never first tried as one contraction box."""
    x, w = RNG.standard_normal((1, 3, 6)), RNG.standard_normal((3, 2, 3))
    text = op("x: real[1, 3, 6]; w: real[3, 2, 3];", "y: real[1, 2, 12];",
              "y[b, o, |2 * i + k - 1|] += x[b, c, i] * w[c, o, k], "
              "b < 1, o < 2, c < 3, i < 6, k < 3;")
    boxes = _count_boxes(monkeypatch)
    out = vectorised(text, {"x": x, "w": w}, max_memory=2 ** 30)["y"]
    expected = np.zeros((1, 2, 12))
    for o in range(2):
        for c in range(3):
            for i in range(6):
                for k in range(3):
                    if 0 <= 2 * i + k - 1 < 12:
                        expected[0, o, 2 * i + k - 1] += x[0, c, i] * w[c, o, k]
    np.testing.assert_allclose(out, expected, rtol=1e-12)
    # one box per run (`vectorised` runs the vector engine twice), none abandoned
    assert [shape for formula_op, shape in boxes if formula_op == "+="] == [(1, 2, 3, 6, 3)] * 2
