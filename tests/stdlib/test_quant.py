"""Spec §4.6 quantization operators, each compared with an independent NumPy implementation
written here from the spec's formulas: rounding is half away from zero (spec §2.4 `round`, the
same in both profiles), quantized values are clamped to the range of a `bits`-wide integer."""

from __future__ import annotations

import numpy as np
import pytest

from refinterp.core.diagnostics import Diagnostic

from .conftest import run


def _round_half_away(x: np.ndarray) -> np.ndarray:
    return np.sign(x) * np.floor(np.abs(x) + 0.5)


def _per_channel(values, x: np.ndarray, channel_axis: int) -> np.ndarray:
    """A scalar, or one value per channel broadcast along `channel_axis`."""
    values = np.asarray(values, dtype=float)
    if values.ndim == 0:
        return values
    shape = [1] * x.ndim
    shape[channel_axis] = len(values)
    return values.reshape(shape)


def ref_zero_point(x, zero_point, scale, bits, signed=True, symmetric=False, channel_axis=1):
    high = 2 ** (bits - 1) - 1 if signed else 2 ** bits - 1
    low = 0 if not signed else (-high if symmetric else -high - 1)
    zp = _per_channel(zero_point, x, channel_axis)
    sc = _per_channel(scale, x, channel_axis)
    quantized = np.clip(zp + _round_half_away(x / sc), low, high)
    return (quantized - zp) * sc


def ref_min_max(x, min, max, bits, signed=True, symmetric=False, channel_axis=1):
    low = _per_channel(min, x, channel_axis)
    high = _per_channel(max, x, channel_axis)
    levels = 2 ** bits - 1 - int(signed and symmetric)
    span = high - low
    return _round_half_away((np.clip(x, low, high) - low) / span * levels) / levels * span + low


ZERO_POINT_CASES = [
    ({"zero_point": 0, "scale": 0.25, "bits": 4}),
    ({"zero_point": 3, "scale": 0.5, "bits": 3, "signed": False}),
    ({"zero_point": 0, "scale": 0.3, "bits": 4, "symmetric": True}),
    ({"zero_point": [1, -2, 0], "scale": [0.1, 0.2, 0.4], "bits": 5}),
    ({"zero_point": [0, 2, 7, 1], "scale": [0.5, 0.25, 0.125, 1.0], "bits": 3,
      "signed": False, "channel_axis": -1}),
    ({"zero_point": [-1, 0], "scale": [0.2, 0.3], "bits": 8, "channel_axis": 0,
      "symmetric": True}),
]


@pytest.mark.parametrize("attributes", ZERO_POINT_CASES)
def test_zero_point_linear_quantize(rng, attributes):
    x = rng.standard_normal((2, 3, 4)) * 2.0
    out = run("quant.zero_point_linear_quantize", {"input": x}, attributes)["output"]
    np.testing.assert_allclose(out, ref_zero_point(x, **attributes), rtol=1e-12, atol=1e-15)


def test_zero_point_rounds_halves_away_from_zero_and_clamps():
    x = np.array([[-1.25, -0.75, -0.25, 0.25, 0.75, 1.25, 100.0, -100.0]])
    out = run("quant.zero_point_linear_quantize", {"input": x},
              {"zero_point": 0, "scale": 0.5, "bits": 4, "channel_axis": 0})["output"]
    #                       -2.5 -1.5 -0.5  0.5  1.5  2.5  200  -200 (x / scale)
    np.testing.assert_array_equal(out, [[-1.5, -1.0, -0.5, 0.5, 1.0, 1.5, 3.5, -4.0]])


MIN_MAX_CASES = [
    ({"min": -1.0, "max": 1.0, "bits": 2}),
    ({"min": -0.5, "max": 2.0, "bits": 4, "signed": False}),
    ({"min": -2.0, "max": 2.0, "bits": 3, "symmetric": True}),
    ({"min": [-1.0, 0.0, -3.0], "max": [1.0, 2.0, 0.5], "bits": 5}),
    ({"min": [-1.0, -2.0, 0.0, -0.5], "max": [0.5, 2.0, 1.0, 0.5], "bits": 3,
      "channel_axis": -1, "symmetric": True}),
]


@pytest.mark.parametrize("attributes", MIN_MAX_CASES)
def test_min_max_linear_quantize(rng, attributes):
    x = rng.standard_normal((2, 3, 4)) * 1.5
    out = run("quant.min_max_linear_quantize", {"input": x}, attributes)["output"]
    np.testing.assert_allclose(out, ref_min_max(x, **attributes), rtol=1e-12, atol=1e-12)


def test_min_max_levels_by_hand():
    # bits 2, unsigned: 3 steps of 2/3 between -1 and 1; signed symmetric: 2 steps of 1
    x = np.array([[-5.0, -0.4, -0.3, 0.2, 0.4, 5.0]])
    attributes = {"min": -1.0, "max": 1.0, "bits": 2, "channel_axis": 0}
    out = run("quant.min_max_linear_quantize", {"input": x},
              {**attributes, "signed": False})["output"]
    np.testing.assert_allclose(out, [[-1.0, -1 / 3, -1 / 3, 1 / 3, 1 / 3, 1.0]], atol=1e-15)
    out = run("quant.min_max_linear_quantize", {"input": x},
              {**attributes, "symmetric": True})["output"]
    np.testing.assert_allclose(out, [[-1.0, 0.0, 0.0, 0.0, 0.0, 1.0]], atol=1e-15)


@pytest.mark.parametrize("name, attributes, message", [
    ("quant.zero_point_linear_quantize", {"zero_point": 0, "scale": 0.0, "bits": 8},
     "scale must be positive"),
    ("quant.zero_point_linear_quantize", {"zero_point": 0, "scale": 1.0, "bits": 0},
     "bits must be positive"),
    ("quant.min_max_linear_quantize", {"min": 0.0, "max": 1.0, "bits": -1},
     "bits must be positive"),
    ("quant.zero_point_linear_quantize", {"zero_point": [0, 0], "scale": 1.0, "bits": 8},
     "must have 3 items"),
])
def test_quantize_attributes_are_checked(rng, name, attributes, message):
    with pytest.raises(Diagnostic, match=message):
        run(name, {"input": rng.standard_normal((2, 3))}, attributes)


def test_zero_point_of_an_infinite_input_is_a_diagnostic():
    """int(round(±inf)) only marks an extreme value; adding the zero point to it is an error
    (docs/semantics.md), never a silently wrapped integer."""
    with pytest.raises(Diagnostic, match="int\\(inf\\)"):
        run("quant.zero_point_linear_quantize", {"input": np.array([[np.inf, 1.0]])},
            {"zero_point": 0, "scale": 1.0, "bits": 8, "channel_axis": 0})


def test_min_max_keeps_infinities_at_the_bounds_and_nan():
    out = run("quant.min_max_linear_quantize", {"input": np.array([[np.inf, -np.inf, np.nan]])},
              {"min": -1.0, "max": 1.0, "bits": 2, "channel_axis": 0})["output"]
    np.testing.assert_array_equal(out, [[1.0, -1.0, np.nan]])
