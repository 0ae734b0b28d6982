"""The faster tap-by-tap `+=` of the vector engine (docs/performance.md "The vector
engine", bullet "Taps"): the pieces that made `nn.deconv` cheaper must keep the engines'
contract (docs/semantics.md "Engines").

- `vector.taps.TapTerms`: the terms of the cells summed again are gathered per group of cells
  reached by the same tap values, only real terms, in iteration order. With the tolerance
  shrunk to nothing every cell is summed again, so the vector engine's result must equal,
  bit for bit, the definition's order computed here by plain Python loops (the formula's
  loop nest: `bi, ci, gi, mi, i.., j..`), on inputs where the order decides the rounding.
- `vector.taps._tap_norms`: the Cauchy-Schwarz bound of the terms' magnitudes per tap value
  must never be below the exact magnitudes (computed here with NumPy from |x| and |w|).
- `vector.taps.tap_parts` one tap value at a time (large parts, `TAP_PARTS_BYTES`) computes what
  one contraction for all the tap values computes.
- `TapForm.hits` with a dimension reached by every tap value the same number of times (the
  output channels) is a scalar factor there, not an array over that dimension.

Expected values come from NumPy or plain Python written in this file, never from refinterp.
No timings: the speed is measured by tools/bench_vector.py.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from refinterp.api import run_operator
from refinterp.lower import engines
from refinterp.lower.vector import sums, taps as vector_taps
from refinterp.lower.vector.stores import Stores

from testsupport.tap_cases import (THREE_FACTORS, check_tap_counts, expected_deconv,
                                      expected_three_factors, operator)

RNG = np.random.default_rng(4242)


@pytest.fixture
def taps(monkeypatch) -> list[bool]:
    """What each call of `Stores.add_by_taps` answered (True: the store ran tap by tap)."""
    answers: list[bool] = []
    original = Stores.add_by_taps

    def spy(self, *args):
        answers.append(original(self, *args))
        return answers[-1]
    monkeypatch.setattr(Stores, "add_by_taps", spy)
    return answers


def in_order_deconv(x: np.ndarray, w: np.ndarray, attributes: dict) -> np.ndarray:
    """nn.deconv (channels first, default padding rule) summed as the definition does: the
    formula's loops `bi, ci, gi, mi, i.., j..` in row-major order, each term added to its
    cell one at a time with Python floats (the first formula's start value is 0.0)."""
    d = x.ndim - 2
    stride = attributes.get("stride", [1] * d)
    dilation = attributes.get("dilation", [1] * d)
    groups = attributes.get("groups", 1) or x.shape[1]
    fd = [(w.shape[2 + a] - 1) * dilation[a] + 1 for a in range(d)]
    total = [fd[a] - stride[a] for a in range(d)]
    front = [t // 2 for t in total]  # padding_align UPPER
    size = [(x.shape[2 + a] - 1) * stride[a] + fd[a] - total[a] for a in range(d)]
    b, n, fc = x.shape[0], w.shape[0], w.shape[1]
    m = n // groups
    out = [[[0.0] * int(np.prod(size)) for _ in range(groups * fc)] for _ in range(b)]
    inputs, filters = x.tolist(), w.tolist()

    def at(nested, index):
        for k in index:
            nested = nested[k]
        return nested

    for bi, ci, gi, mi in itertools.product(range(b), range(fc), range(groups), range(m)):
        row = out[bi][gi * fc + ci]
        for i in itertools.product(*(range(e) for e in x.shape[2:])):
            for j in itertools.product(*(range(e) for e in w.shape[2:])):
                p = [stride[a] * i[a] + dilation[a] * j[a] - front[a] for a in range(d)]
                if all(0 <= p[a] < size[a] for a in range(d)):
                    flat = int(np.ravel_multi_index(p, size))
                    row[flat] += at(inputs[bi][gi * m + mi], i) * \
                        at(filters[gi * m + mi][ci], j)
    return np.array(out).reshape(b, groups * fc, *size)


def cancelling(shape: tuple[int, ...], channels_axis: int = 1) -> np.ndarray:
    """Values of mixed magnitudes (1e-8 to 1e8) whose channels come in pairs x, -x (plus a
    little noise): sums of them cancel, so their rounding depends on the order."""
    half = list(shape)
    half[channels_axis] //= 2
    x = RNG.standard_normal(half) * 10.0 ** RNG.uniform(-8, 8, half)
    both = np.concatenate([x, -x * (1 + 1e-12 * RNG.standard_normal(half))],
                          axis=channels_axis)
    return both


@pytest.fixture
def resum_everything(monkeypatch) -> None:
    """No cell fits the (shrunk) tolerance: every cell with a nonzero term is summed again
    in iteration order."""
    monkeypatch.setattr(sums, "REAL_RTOL", 1e-300)
    monkeypatch.setattr(sums, "REAL_ATOL", 0.0)


RESUMMED = [  # input shape, filter shape, attributes
    ((2, 4, 6, 6), (4, 3, 3, 3), {}),                       # stride 1: every tap everywhere
    ((2, 4, 6, 6), (4, 3, 3, 3), {"stride": [2, 2]}),       # four stride phases
    ((2, 4, 6, 6), (4, 2, 3, 3), {"groups": 2}),
    ((1, 4, 7, 5), (4, 2, 3, 2), {"stride": [3, 2], "dilation": [2, 1]}),
    ((2, 4, 12), (4, 3, 5), {"stride": [2]}),
    ((1, 2, 4, 4, 4), (2, 2, 2, 2, 2), {"stride": [2, 1, 2]}),
]


@pytest.mark.parametrize("input_shape, filter_shape, attributes", RESUMMED)
def test_cells_summed_again_equal_the_definitions_order_bit_for_bit(
        taps, resum_everything, input_shape, filter_shape, attributes):
    x = cancelling(input_shape)
    w = RNG.standard_normal(filter_shape) * 10.0 ** RNG.uniform(-3, 3, filter_shape)
    vector = run_operator("nn.deconv", {"input": x, "filter": w}, attributes, engine="vector")
    assert True in taps
    expected = in_order_deconv(x, w, attributes)
    np.testing.assert_array_equal(vector["output"], expected)
    if input_shape[2:] == (6, 6):  # many terms per cell: the order matters on these inputs
        assert not np.array_equal(expected_deconv(x, w, attributes), expected)


@pytest.mark.parametrize("input_shape, filter_shape, attributes", RESUMMED[:3])
def test_cancelling_deconvolutions_agree_with_the_definitions_order(
        taps, input_shape, filter_shape, attributes):
    """With the real tolerance: within it of the in-order sums, everywhere."""
    x = cancelling(input_shape)
    w = RNG.standard_normal(filter_shape)
    vector = run_operator("nn.deconv", {"input": x, "filter": w}, attributes, engine="vector")
    assert True in taps
    found = engines.difference(in_order_deconv(x, w, attributes), vector["output"], "output")
    assert found is None, found


def test_a_condition_and_three_factors_summed_again_in_order(taps, resum_everything):
    """The 0/1 mask of a condition (its skipped terms are no terms) and a third factor (no
    Cauchy-Schwarz bound: the magnitudes' own contraction) in the iteration order."""
    x, v, w = cancelling((12, 4), 1), RNG.standard_normal(10), RNG.standard_normal((4, 3))
    path = operator("x: real[12, 4]; v: real[10]; w: real[4, 3];", "y: real[24, 11];",
                    "y[|2 * i + j - 1|, |k + j - 1|] += x[i, c] * v[k] * w[c, j], "
                    "i < 12, k < 10, c < 4, j < 3 | x[i, c] > -1.0;")
    vector = run_operator("f", {"x": x, "v": v, "w": w}, file=path, engine="vector")
    assert True in taps
    expected = [[0.0] * 11 for _ in range(24)]
    for i, k, c, j in itertools.product(range(12), range(10), range(4), range(3)):
        p, q = 2 * i + j - 1, k + j - 1
        if 0 <= p < 24 and 0 <= q < 11 and x[i, c] > -1.0:
            expected[p][q] += float(x[i, c]) * float(v[k]) * float(w[c, j])
    np.testing.assert_array_equal(vector["y"], np.array(expected))


@pytest.mark.parametrize("input_shape, filter_shape, attributes", [
    ((1, 6, 9, 9), (6, 4, 5, 5), {}),
    ((2, 6, 9, 9), (6, 4, 5, 5), {"stride": [2, 2]}),
    ((1, 4, 8, 7), (4, 3, 3, 2), {"stride": [2, 1], "dilation": [1, 2]}),
])
def test_the_magnitude_bound_is_never_below_the_exact_magnitudes(
        monkeypatch, input_shape, filter_shape, attributes):
    """The bound `add_by_taps` hands to `add_in_order` (per tap value, the product of the
    norms of the input and of the filter over the summed channels, then summed over the tap
    values) against sum |x| |w| of every cell, computed with NumPy; and the input's norms
    spread over many magnitudes, squares that underflow included."""
    x = RNG.standard_normal(input_shape) * 10.0 ** RNG.uniform(-170, 150, input_shape)
    w = RNG.standard_normal(filter_shape)
    seen: list[tuple[np.ndarray, np.ndarray]] = []
    original = Stores.add_in_order

    def spy(self, view, fast, magnitude, *args, **kwargs):
        seen.append((view, np.array(magnitude)))
        return original(self, view, fast, magnitude, *args, **kwargs)
    monkeypatch.setattr(Stores, "add_in_order", spy)
    out = run_operator("nn.deconv", {"input": x, "filter": w}, attributes, engine="vector")
    exact = expected_deconv(np.abs(x), np.abs(w), attributes)
    assert seen
    for view, magnitude in seen:
        base = view.base if view.base is not None else view
        offset = (view.__array_interface__["data"][0] -
                  base.__array_interface__["data"][0]) // view.itemsize
        low = np.unravel_index(offset, out["output"].shape)
        region = tuple(slice(lo, lo + n) for lo, n in zip(low, view.shape))
        assert np.all(magnitude >= exact[region]), attributes
    found = engines.difference(expected_deconv(x, w, attributes), out["output"], "output")
    assert found is None, found


@pytest.mark.parametrize("input_shape, filter_shape, attributes", [
    ((2, 4, 6, 6), (4, 3, 3, 3), {"stride": [2, 2]}),
    ((2, 4, 7, 5), (4, 3, 3, 2), {"stride": [3, 2], "dilation": [2, 1],
                                  "padding": [1, 0, 2, 1]}),
    ((2, 4, 6, 6), (4, 2, 3, 3), {"groups": 2, "dilation": [1, 2]}),
])
def test_one_contraction_per_tap_value_computes_the_same(monkeypatch, taps, input_shape,
                                                         filter_shape, attributes):
    """Parts too large for one contraction are computed one tap value at a time."""
    x, w = RNG.standard_normal(input_shape), RNG.standard_normal(filter_shape)
    whole = run_operator("nn.deconv", {"input": x, "filter": w}, attributes, engine="vector")
    monkeypatch.setattr(vector_taps, "TAP_PARTS_BYTES", 0)
    calls: list[int] = []
    original = vector_taps.contract_reals

    def counting(spec, operands):
        calls.append(1)
        return original(spec, operands)
    monkeypatch.setattr(vector_taps, "contract_reals", counting)
    one_by_one = run_operator("nn.deconv", {"input": x, "filter": w}, attributes,
                              engine="vector")
    assert True in taps and len(calls) >= np.prod(filter_shape[2:])  # one per tap value
    expected = expected_deconv(x, w, attributes)
    np.testing.assert_allclose(one_by_one["output"], expected, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(whole["output"], expected, rtol=1e-12, atol=1e-12)


def test_one_contraction_per_tap_value_with_three_factors(monkeypatch, taps):
    """... and with the magnitudes' own contraction (three factors: no norms)."""
    monkeypatch.setattr(vector_taps, "TAP_PARTS_BYTES", 0)
    x, v, w = RNG.standard_normal((12, 4)), RNG.standard_normal(10), RNG.standard_normal((4, 3))
    path = operator(*THREE_FACTORS)
    vector = run_operator("f", {"x": x, "v": v, "w": w}, file=path, engine="vector")
    assert True in taps
    np.testing.assert_allclose(vector["y"], expected_three_factors(x, v, w), rtol=1e-12,
                               atol=1e-12)


def test_a_dimension_every_tap_value_reaches_alike_is_no_dimension_of_the_tap_counts(
        monkeypatch):
    """nn.deconv's output channel `gi * fc + ci` makes `gi` a tap (of extent 1 here) that
    every cell of the channel dimension counts once: the counts stay an array over the
    spatial dimensions only (fewer cells for the error bounds), with the right values."""
    shapes = check_tap_counts(monkeypatch)
    x, w = RNG.standard_normal((1, 4, 6, 6)), RNG.standard_normal((4, 5, 3, 3))
    run_operator("nn.deconv", {"input": x, "filter": w}, {"stride": [2, 2]}, engine="vector")
    assert shapes
    for shape, region in shapes:
        assert shape[1] == 1 and region[1] == 5  # not spread over the 5 output channels
