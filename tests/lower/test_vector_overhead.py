"""The vector engine's cheaper paths keep the results of the slower ones.

- A real contraction or sum bounds its terms' magnitude by Cauchy-Schwarz (sums of squares,
  `vector.sums.magnitude_bound`) and takes the exact magnitude only for the cells that bound
  leaves open: the bound must never be below the exact magnitude, and the cells summed again
  in iteration order must still be exactly those that cancel.
- Outputs whose first formula assigns every cell are allocated without zeros
  (`vector.fresh_outputs`): a formula that assigns only some cells, stores nothing, or falls
  back must still leave zeros in the others.

Speed itself is measured by tools/bench_vector.py, never here.
"""

from __future__ import annotations

import numpy as np
import pytest

from refinterp import api
from refinterp.lower.vector import stores, sums

from testsupport.vector_cases import Example, check_equal, op, run_both, vectorised

RNG = np.random.default_rng(21)


def _exact_magnitude(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.abs(a) @ np.abs(b)


@pytest.mark.parametrize("scale", [1.0, 1e-160, 1e-300, 1e160])
def test_matrix_bound_is_above_the_exact_magnitude(scale):
    a = RNG.standard_normal((7, 9)) * scale
    b = RNG.standard_normal((9, 5))
    a[0, :] = 0.0
    a[1, 0] = 5e-324  # a subnormal: its square underflows to zero
    bound = sums.magnitude_bound("ab,bc->ac", [a, b], (7, 9, 5), {0, 1, 2})
    assert bound is not None and bound.shape == (7, 5)
    exact = _exact_magnitude(a, b)
    finite = np.isfinite(bound)
    assert (bound[finite] >= exact[finite]).all()
    if scale == 1e160:  # squares overflow: no bound (inf), those cells get the exact one
        assert not finite.all()


@pytest.mark.parametrize("scale", [1.0, 1e-170, 1e-320])
def test_sum_bound_is_above_the_exact_magnitude(scale):
    x = RNG.standard_normal((4, 11)) * scale
    bound = sums.magnitude_bound("ab->a", [x], (4, 11), {0, 1})
    assert (bound >= np.abs(x).sum(axis=1)).all()


def test_a_batched_product_is_bounded_by_cauchy_schwarz():
    a, b = RNG.standard_normal((3, 4, 5)), RNG.standard_normal((3, 5, 6))
    bound = sums.magnitude_bound("abc,acd->abd", [a, b], (3, 4, 5, 6), {0, 1, 2, 3})
    exact = np.einsum("abc,acd->abd", np.abs(a), np.abs(b))
    assert (bound >= exact).all()
    # Cauchy-Schwarz itself, from NumPy norms: within a few roundings of sqrt(sum a^2 sum b^2)
    norms = np.sqrt(np.einsum("abc,abc->ab", a, a)[:, :, None] *
                    np.einsum("acd,acd->ad", b, b)[:, None, :])
    assert np.allclose(bound, norms, rtol=1e-13)


def test_a_convolution_bound_covers_a_factor_missing_a_summed_letter():
    """`ab,b->a` summed over b and c where the second factor lacks c: each factor as a vector
    over (b, c), the one lacking c repeated c's extent times."""
    x, w = RNG.standard_normal((4, 3, 2)), RNG.standard_normal((3,))
    bound = sums.magnitude_bound("abc,b->a", [x, w], (4, 3, 2), {0, 1, 2})
    exact = np.abs(x * w[None, :, None]).sum(axis=(1, 2))
    assert (bound >= exact).all()
    expected = np.sqrt((x * x).sum(axis=(1, 2)) * (w * w).sum() * 2)
    assert np.allclose(bound, expected, rtol=1e-13)


def test_a_factor_with_a_repeated_letter_has_no_cheap_bound():
    a, b = RNG.standard_normal((4, 4)), RNG.standard_normal((4,))
    assert sums.magnitude_bound("aa,a->", [a, b], (4,), {0}) is None


def _in_order(values, start=0.0):
    total = start
    for v in values:
        total += v
    return total


def test_matmul_cancelling_cells_are_summed_in_order():
    """Cells that cancel are the definition's sums exactly; the others are within tolerance."""
    a = RNG.standard_normal((6, 4))
    b = RNG.standard_normal((4, 5))
    a[2] = [1e16, 1.0, -1e16, 1.0]
    b[:, 3] = [1.0, 1.0, 1.0, 1.0]
    out = vectorised(op("a: real[6, 4]; b: real[4, 5];", "z: real[6, 5];",
                        "z[i, j] += a[i, k] * b[k, j], i < 6, j < 5, k < 4;"),
                     {"a": a, "b": b})["z"]
    assert out[2, 3] == _in_order(a[2] * b[:, 3])  # 1e16 + 1 - 1e16 + 1 = 2.0, not 1.0
    np.testing.assert_allclose(out, a @ b, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("engine", ["scalar", "vector"])
def test_sum_reduce_rows_that_cancel(engine):
    x = RNG.standard_normal((5, 300))
    x[1, :3] = [1e20, 1.0, -1e20]
    x[3] = 1e-200  # tiny terms, whose squares underflow: within the absolute tolerance
    out = api.evaluate("math.sum_reduce", inputs={"input": x}, attributes={"axes": [1]},
                       engine=engine).outputs["output"][:, 0]
    assert out[1] == _in_order(x[1])  # summed again in order: 1e20 + 1 - 1e20 is 0
    np.testing.assert_allclose(out, [_in_order(row) for row in x], rtol=1e-12)


# ------------------------------------------------------------------ outputs without zeros


def test_fresh_output_assigned_in_part_keeps_zeros():
    """The first formula assigns only the first two cells: the others stay zero."""
    x = np.arange(1.0, 5.0)
    out = vectorised(op("x: real[4];", "y: real[6];", "y[i] = x[i], i < 2;"), {"x": x})
    assert out["y"].tolist() == [1.0, 2.0, 0.0, 0.0, 0.0, 0.0]


def test_fresh_output_with_a_guard_keeps_zeros():
    x = np.arange(1.0, 6.0)
    out = vectorised(op("x: real[5];", "y: real[5];", "y[i] = x[|i - 2|], i < 5;"),
                     {"x": x})
    assert out["y"].tolist() == [0.0, 0.0, 1.0, 2.0, 3.0]


def test_fresh_output_of_a_fallback_formula_keeps_zeros():
    """An int that may leave int64 makes the formula fall back; the compiled engine
    starts from zeros all the same."""
    n = np.array([2 ** 62, 1, 3], dtype=np.int64)
    text = op("n: int[3];", "y: int[4];", "y[i] = n[i] * 2, i < 3 | n[i] < 10;")
    scalar, vector, _ = run_both(Example(text, {"n": n}))
    assert scalar["y"].tolist() == vector["y"].tolist() == [0, 2, 6, 0]


def test_fresh_output_then_an_update():
    x = RNG.standard_normal((3, 4))
    check_equal(Example(op("x: real[3, 4];", "y: real[3];",
                           "y[i] = 1.0, i < 3;", "y[i] += x[i, j], i < 3, j < 4;"),
                        {"x": x}))


def test_fresh_output_in_small_boxes():
    """A tiny memory budget cuts the iteration space into boxes: the zeros come first."""
    x = RNG.standard_normal(64)
    check_equal(Example(op("x: real[64];", "y: real[80];", "y[i] = x[i] * 2.0, i < 64;"),
                        {"x": x}), max_memory=200)


def _blocked_case(rng, scale):
    """A contraction's blocks summed by BlockedSum against the definition's order."""
    n, cells = 96, 40
    a = rng.standard_normal((cells, n)) * rng.choice([1.0, scale], size=(cells, n))
    b = rng.standard_normal(n) * rng.choice([1.0, scale], size=n)
    start = rng.standard_normal(cells) * rng.choice([0.0, 1.0, scale], size=cells)
    spans = [(lo, min(lo + 10, n)) for lo in range(0, n, 10)]
    with np.errstate(all="ignore"):  # products beyond float64 overflow, as in the definition
        parts = [a[:, lo:hi] @ b[lo:hi] for lo, hi in spans]
        magnitude = np.abs(a) @ np.abs(b)
        summed = sums.BlockedSum.of(start.copy(), parts, [hi - lo for lo, hi in spans],
                                  magnitude, 2)
        definition = np.array([_in_order([float(a[c, k] * b[k]) for k in range(n)],
                                         float(start[c])) for c in range(cells)])
    return summed, definition, np.abs(start) + magnitude


@pytest.mark.parametrize("scale", [1.0, 1e8, 1e16, 1e200])
@pytest.mark.parametrize("seed", range(5))
def test_the_blocked_sum_error_bound_holds(seed, scale):
    """|blocked total - the definition's in-order sum| <= BlockedSum.error in every cell, with
    magnitudes mixed enough that cancellations happen (the definition computed by a Python loop
    here, one addition at a time from the current value). The bound is computed for any cells
asked (`add_in_order` asks only for those the gamma(n) bound leaves open): here all."""
    summed, definition, _ = _blocked_case(np.random.default_rng(seed), scale)
    difference = np.abs(summed.total - definition)
    finite = np.isfinite(definition)
    error = summed.error(np.arange(summed.total.size))
    assert (difference[finite] <= error[finite]).all()


def test_the_blocked_bound_is_tighter_than_gamma_n():
    """Blocks of 10 of 96 terms: several times below the any-order bound of both sums,
    2 gamma(n + 1) (|current value| + magnitude), which the unblocked sum must use."""
    summed, _, reach = _blocked_case(np.random.default_rng(9), 1.0)
    assert (summed.error(np.arange(summed.total.size)) < 2 * sums.gamma(97) * reach / 3).all()


def test_a_blocked_matmul_resums_few_cells(monkeypatch):
    """The vector engine's blocked contraction: random 64 x 1024 @ 1024 x 64 (mixed signs)
    re-sums only the few cells that truly cancel, and agrees with the in-order definition."""
    rng = np.random.default_rng(4)
    a, b = rng.standard_normal((64, 1024)), rng.standard_normal((1024, 64))
    resummed = []
    original = stores.Stores.add_in_order

    def counting(self, view, fast, magnitude, count, terms, *args, **kwargs):
        return original(self, view, fast, magnitude, count,
                        lambda cells: resummed.append(len(cells)) or terms(cells),
                        *args, **kwargs)

    monkeypatch.setattr(stores.Stores, "add_in_order", counting)
    out = vectorised(op("a: real[64, 1024]; b: real[1024, 64];", "z: real[64, 64];",
                        "z[i, j] += a[i, k] * b[k, j], i < 64, j < 64, k < 1024;"),
                     {"a": a, "b": b})["z"]
    expected = np.array([[_in_order((a[i] * b[:, j]).tolist()) for j in range(64)]
                         for i in range(64)])
    assert np.allclose(out, expected, rtol=1e-9, atol=1e-12)
    assert sum(resummed) < 0.01 * 64 * 64


def test_the_blocked_bound_of_some_cells_is_theirs_among_all():
    """`BlockedSum.error(cells)` recomputes the prefixes of just those cells: the same
    values as for all cells, picked."""
    summed, _, _ = _blocked_case(np.random.default_rng(3), 1e8)
    every = summed.error(np.arange(summed.total.size))
    some = np.array([0, 7, 8, 31, 39])
    np.testing.assert_array_equal(summed.error(some), every[some])
