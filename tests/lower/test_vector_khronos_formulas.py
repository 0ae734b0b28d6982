"""Formulas written the way the Khronos stdlib writes its operators (and converters call them:
grouped convolutions, bias in a separate formula, padding as bounded `|...|` reads, a linear
layer summing the input channel before the output one, max pooling by `>?=` with an
asymmetric padding) run on the vector engine and equal the compiled engine (equal to the
reference) and NumPy (docs/performance.md "Khronos stdlib formulas").

- `vector.sums.sliced_square_sums`: a grouped convolution's windows (group and channel walk
  the same memory axis) are squared one group at a time on the input itself, not once per
  filter tap; the result equals the plain einsum.

- `tools/bench_vector.py`'s Khronos rows: skipped without the Khronos stdlib; their NumPy
  baselines (LRN, grouped convolution, batch norm) checked against loops written here.

The formulas are written here for these tests; expected values come from NumPy code in this
file, never from refinterp.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest
from numpy.lib.stride_tricks import sliding_window_view

from refinterp.lower.vector import sums

from testsupport.vector_cases import op, vectorised

RNG = np.random.default_rng(4003)


def grouped_conv_formulas(groups: int, per_group_in: int, per_group_out: int, size: int,
                          extent: int) -> str:
    """A stride-1 'same' convolution in `groups` groups, NCHW: the output channel
    g * m + o, the input channel g * c + k, the padding as bounded reads, the bias first."""
    ic, oc, pad = groups * per_group_in, groups * per_group_out, size // 2
    return op(f"x: real[1, {ic}, {extent}, {extent}]; "
              f"w: real[{oc}, {per_group_in}, {size}, {size}]; bias: real[{oc}];",
              f"y: real[1, {oc}, {extent}, {extent}];",
              f"y[b, n, i, j] = bias[n], b < 1, n < {oc}, i < {extent}, j < {extent};",
              f"y[b, g * {per_group_out} + o, i, j] += "
              f"x[b, g * {per_group_in} + k, |i + p - {pad}|, |j + q - {pad}|] * "
              f"w[g * {per_group_out} + o, k, p, q], b < 1, g < {groups}, "
              f"o < {per_group_out}, k < {per_group_in}, i < {extent}, j < {extent}, "
              f"p < {size}, q < {size};")


def numpy_grouped_conv(x: np.ndarray, w: np.ndarray, bias: np.ndarray, groups: int
                       ) -> np.ndarray:
    pad = w.shape[2] // 2
    padded = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    windows = sliding_window_view(padded, w.shape[2:], axis=(2, 3))  # b c i j p q
    parts = [np.einsum("bcijpq,ocpq->boij", xs, ws)
             for xs, ws in zip(np.split(windows, groups, axis=1), np.split(w, groups))]
    return np.concatenate(parts, axis=1) + bias.reshape(1, -1, 1, 1)


@pytest.mark.parametrize("groups, per_group_in, per_group_out, size, extent", [
    (2, 2, 3, 3, 6),  # a short sum: one contraction
    (2, 32, 3, 3, 6),  # 288 terms per cell: blocked sums; windows squared by group
    (4, 1, 2, 5, 7),  # one input channel per group (depthwise-like)
])
def test_a_grouped_convolution_equals_the_reference_and_numpy(groups, per_group_in,
                                                              per_group_out, size, extent):
    x = RNG.standard_normal((1, groups * per_group_in, extent, extent))
    w = RNG.standard_normal((groups * per_group_out, per_group_in, size, size))
    bias = RNG.standard_normal(groups * per_group_out)
    text = grouped_conv_formulas(groups, per_group_in, per_group_out, size, extent)
    out = vectorised(text, {"x": x, "w": w, "bias": bias})["y"]
    np.testing.assert_allclose(out, numpy_grouped_conv(x, w, bias, groups),
                               rtol=1e-9, atol=1e-9)


def test_a_linear_layer_summing_the_input_channel_first_equals_numpy():
    """The input channel iterated before the output one: the filter is read transposed."""
    x, w, bias = (RNG.standard_normal((2, 300)), RNG.standard_normal((7, 300)),
                  RNG.standard_normal(7))
    text = op("x: real[2, 300]; w: real[7, 300]; bias: real[7];", "y: real[2, 7];",
              "y[b, n] = bias[n], b < 2, n < 7;",
              "y[b, n] += x[b, c] * w[n, c], b < 2, c < 300, n < 7;")
    out = vectorised(text, {"x": x, "w": w, "bias": bias})["y"]
    np.testing.assert_allclose(out, x @ w.T + bias, rtol=1e-9, atol=1e-9)


def test_max_pooling_with_an_asymmetric_padding_equals_numpy():
    """3x3 windows, stride 2, padding 0 before and 1 after (AlexNet's last pooling)."""
    x = RNG.standard_normal((1, 3, 8, 8))
    text = op("x: real[1, 3, 8, 8];", "y: real[1, 3, 4, 4];",
              "y[b, c, i, j] = -inf, b < 1, c < 3, i < 4, j < 4;",
              "y[b, c, i, j] >?= x[b, c, |2 * i + p|, |2 * j + q|], "
              "b < 1, c < 3, i < 4, j < 4, p < 3, q < 3;")
    out = vectorised(text, {"x": x})["y"]
    padded = np.pad(x, ((0, 0), (0, 0), (0, 1), (0, 1)), constant_values=-np.inf)
    expected = sliding_window_view(padded, (3, 3), axis=(2, 3))[:, :, ::2, ::2].max(
        axis=(4, 5))
    np.testing.assert_array_equal(out, expected)


def _grouped_windows(x: np.ndarray, groups: int, size: int) -> np.ndarray:
    """The windows of `x` (1 c h w) as (group, channel, i, j, p, q): a strided view."""
    windows = sliding_window_view(x[0], (size, size), axis=(1, 2))
    return windows.reshape((groups, x.shape[1] // groups) + windows.shape[1:])


@pytest.mark.parametrize("groups, channels, size", [(2, 96, 5), (3, 12, 3), (8, 64, 3)])
def test_grouped_window_sums_of_squares_are_taken_by_group(groups, channels, size):
    x = RNG.standard_normal((1, channels, 14, 14))
    windows = _grouped_windows(x, groups, size)
    # the group and the channel walk one memory axis: the whole view does not qualify
    assert sums.square_sums(windows, "gchwij", "ghw") is None
    found = sums.sliced_square_sums(windows, "gchwij", "ghw")
    assert found is not None
    expected = np.einsum("gchwij,gchwij->ghw", windows, windows)
    np.testing.assert_allclose(found, expected, rtol=1e-13)
    np.testing.assert_allclose(sums.sum_of_squares(windows, "gchwij", "ghw"), expected,
                               rtol=1e-13)


def test_sliced_sums_of_squares_decline_where_no_slice_qualifies():
    """No kept letter to slice, or slices that still share a memory axis: None (einsum)."""
    x = RNG.standard_normal((1, 8, 10, 10))
    windows = _grouped_windows(x, 2, 3)
    assert sums.sliced_square_sums(windows, "gchwij", "") is None
    flipped = windows[:, :, ::-1]
    np.testing.assert_allclose(sums.sum_of_squares(flipped, "gchwij", "g"),
                               np.einsum("gchwij,gchwij->g", flipped, flipped), rtol=1e-13)


def _bench_vector():
    """tools/bench_vector.py as a module (its Khronos rows are tested, not timed)."""
    path = Path(__file__).resolve().parents[2] / "tools" / "bench_vector.py"
    spec = importlib.util.spec_from_file_location("bench_vector_khronos_test", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_the_benchmarks_khronos_rows_are_skipped_without_the_khronos_stdlib(tmp_path,
                                                                             monkeypatch):
    bench = _bench_vector()
    monkeypatch.setenv("KHRONOS_STDLIB", str(tmp_path))  # a folder without nn.sknd
    assert bench.khronos_stdlib() is None
    assert bench.khronos_cases(np.random.default_rng(0), "vector") == {}
    (tmp_path / "nn.sknd").write_text("")
    assert bench.khronos_stdlib() == str(tmp_path)


def test_the_benchmarks_numpy_baselines_match_their_definitions():
    """The NumPy baselines of the Khronos rows, against loops written out here."""
    bench = _bench_vector()
    x = RNG.standard_normal((1, 7, 3, 2))
    expected = np.empty_like(x)
    for c in range(7):
        window = sum(x[:, k] ** 2 for k in range(c - 2, c + 3) if 0 <= k < 7)
        expected[:, c] = x[:, c] / (1.0 + 1e-4 / 5 * window) ** 0.75
    np.testing.assert_allclose(bench.np_lrn(x, 5, 1e-4, 0.75, 1.0), expected, rtol=1e-13)
    gx, gw, gb = (RNG.standard_normal((1, 4, 5, 5)), RNG.standard_normal((6, 2, 3, 3)),
                  RNG.standard_normal(6))
    np.testing.assert_allclose(bench.np_grouped_conv(gx, gw, 2, 1, gb),
                               numpy_grouped_conv(gx, gw, gb, 2), rtol=1e-12)
    mean, variance, shift, scale = (RNG.uniform(0.5, 1.5, 7) for _ in range(4))
    np.testing.assert_allclose(
        bench.np_batch_norm(x, mean, variance, shift, scale),
        (x - mean[:, None, None]) / np.sqrt(variance[:, None, None] + 1e-5) *
        scale[:, None, None] + shift[:, None, None], rtol=1e-13)
