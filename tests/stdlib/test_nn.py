"""Spec §4.4 neural-network operators (and the Khronos-era activations), each compared with an
independent NumPy implementation written here.

Shapes and padding rules of the references are derived from the spec text (§4.4.1/§4.4.2):
with no explicit padding the total padding is `((ceil_mode ? ⌈x/s⌉ : ⌊x/s⌋) - 1) * s + fd - x`,
split as ⌊total/2⌋ in front for 'UPPER' and ⌈total/2⌉ for 'LOWER'; the output extent is
`⌊(x + total - fd) / s⌋ + 1` (⌈·⌉ with `ceil_mode`); padded positions contribute nothing."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from refinterp.cli import main
from refinterp.core.diagnostics import Diagnostic

from .conftest import run

# ----------------------------------------------------------------------------- NumPy references


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def _window_geometry(extents, size, stride, dilation, padding, padding_align, ceil_mode):
    """Per windowed axis: (front padding, output extent), following the spec's formulas."""
    k = len(extents)
    front, out = [], []
    for a in range(k):
        fd = (size[a] - 1) * dilation[a] + 1
        if padding is None:
            steps = _ceil_div(extents[a], stride[a]) if ceil_mode else extents[a] // stride[a]
            total = (steps - 1) * stride[a] + fd - extents[a]
            front.append(total // 2 if padding_align == "UPPER" else _ceil_div(total, 2))
        else:
            total = padding[a] + padding[k + a]
            front.append(padding[a])
        span = extents[a] + total - fd
        out.append((_ceil_div(span, stride[a]) if ceil_mode else span // stride[a]) + 1)
    return front, out


def _to_ncx(x: np.ndarray, data_format: str) -> np.ndarray:
    if data_format == "NXC":
        return np.moveaxis(x, -1, 1)
    if data_format == "XCN":
        return np.moveaxis(x, [-1, -2], [0, 1])
    return x


def _from_ncx(x: np.ndarray, data_format: str) -> np.ndarray:
    if data_format == "NXC":
        return np.moveaxis(x, 1, -1)
    if data_format == "XCN":
        return np.moveaxis(x, [0, 1], [-1, -2])
    return x


def _filter_to_ncx(w: np.ndarray, filter_format: str) -> np.ndarray:
    """Any filter layout to [n, c, x..]."""
    if filter_format == "NXC":
        return np.moveaxis(w, -1, 1)
    if filter_format == "XCN":
        return np.moveaxis(w, [-1, -2], [0, 1])
    if filter_format == "CXN":
        return np.moveaxis(w, [-1, 0], [0, 1])
    return w


def ref_conv(x, w, bias=None, stride=None, dilation=None, padding=None, padding_align="UPPER",
             ceil_mode=False, groups=1, data_format="NCX", filter_format="NCX"):
    x = _to_ncx(x, data_format)
    w = _filter_to_ncx(w, filter_format)
    d = x.ndim - 2
    stride = stride or [1] * d
    dilation = dilation or [1] * d
    b, ic, ix = x.shape[0], x.shape[1], x.shape[2:]
    n, fc, fx = w.shape[0], w.shape[1], w.shape[2:]
    g = ic if groups == 0 else groups
    m = n // g
    front, ox = _window_geometry(ix, fx, stride, dilation, padding, padding_align, ceil_mode)
    out = np.zeros((b, n, *ox))
    if bias is not None:
        out += bias.reshape((1, n) + (1,) * d)
    for o in itertools.product(*map(range, ox)):
        for j in itertools.product(*map(range, fx)):
            p = [stride[a] * o[a] + dilation[a] * j[a] - front[a] for a in range(d)]
            if all(0 <= p[a] < ix[a] for a in range(d)):
                patch = x[(slice(None), slice(None), *p)].reshape(b, g, fc)
                taps = w[(slice(None), slice(None), *j)].reshape(g, m, fc)
                out[(slice(None), slice(None), *o)] += \
                    np.einsum("bgc,gmc->bgm", patch, taps).reshape(b, n)
    return _from_ncx(out, data_format)


def ref_deconv(x, w, bias=None, stride=None, dilation=None, padding=None,
               padding_align="UPPER", output_size=None, groups=1, data_format="NCX",
               filter_format="NCX"):
    """Transposed convolution: input position i and filter tap j add into output position
    stride * i + dilation * j - front."""
    x = _to_ncx(x, data_format)
    w = _filter_to_ncx(w, filter_format)
    d = x.ndim - 2
    stride = stride or [1] * d
    dilation = dilation or [1] * d
    b, ic, ix = x.shape[0], x.shape[1], x.shape[2:]
    n, fc, fx = w.shape[0], w.shape[1], w.shape[2:]
    g = ic if groups == 0 else groups
    m = n // g
    fd = [(fx[a] - 1) * dilation[a] + 1 for a in range(d)]
    if padding is None:
        total = [fd[a] - stride[a] for a in range(d)]
        front = [t // 2 if padding_align == "UPPER" else _ceil_div(t, 2) for t in total]
    else:
        total = [padding[a] + padding[d + a] for a in range(d)]
        front = list(padding[:d])
    ox = output_size or [(ix[a] - 1) * stride[a] + fd[a] - total[a] for a in range(d)]
    out = np.zeros((b, fc * g, *ox))
    if bias is not None:
        out += bias.reshape((1, fc * g) + (1,) * d)
    for i in itertools.product(*map(range, ix)):
        for j in itertools.product(*map(range, fx)):
            p = [stride[a] * i[a] + dilation[a] * j[a] - front[a] for a in range(d)]
            if all(0 <= p[a] < ox[a] for a in range(d)):
                values = x[(slice(None), slice(None), *i)].reshape(b, g, m)
                taps = w[(slice(None), slice(None), *j)].reshape(g, m, fc)
                out[(slice(None), slice(None), *p)] += \
                    np.einsum("bgm,gmc->bgc", values, taps).reshape(b, g * fc)
    return _from_ncx(out, data_format)


# ----------------------------------------------------------------------------- linear


def test_linear_with_and_without_bias(rng):
    x = rng.standard_normal((3, 4))
    w = rng.standard_normal((5, 4))
    bias = rng.standard_normal(5)
    np.testing.assert_allclose(run("nn.linear", {"input": x, "filter": w})["output"], x @ w.T)
    out = run("nn.linear", {"input": x, "filter": w, "bias": bias})["output"]
    np.testing.assert_allclose(out, x @ w.T + bias)


# ----------------------------------------------------------------------------- conv

CONV_CASES = [
    # (input shape, filter shape, attributes)
    ((1, 2, 5, 5), (3, 2, 3, 3), {}),
    ((2, 2, 6, 5), (2, 2, 3, 2), {"stride": [2, 2]}),
    ((1, 2, 6, 6), (2, 2, 2, 3), {"stride": [2, 3], "ceil_mode": True}),
    ((1, 1, 7, 6), (2, 1, 3, 3), {"dilation": [2, 1], "padding": [1, 0, 2, 1]}),
    ((1, 2, 5, 4), (2, 2, 2, 2), {"padding_align": "LOWER"}),
    ((1, 4, 5, 5), (6, 2, 3, 3), {"groups": 2}),
    ((1, 3, 5, 4), (6, 1, 3, 3), {"groups": 0, "stride": [2, 1]}),
    ((2, 2, 7), (3, 2, 3), {"stride": [2], "padding": [0, 0]}),
    ((1, 1, 5, 6), (1, 1, 2, 3), {"stride": [2, 2], "padding": [0, 1, 0, 0], "ceil_mode": True}),
    ((1, 1, 4, 3, 3), (2, 1, 2, 2, 2), {"padding": [1, 0, 0, 0, 1, 1]}),
]


@pytest.mark.parametrize("input_shape, filter_shape, attributes", CONV_CASES)
def test_conv(rng, input_shape, filter_shape, attributes):
    x = rng.standard_normal(input_shape)
    w = rng.standard_normal(filter_shape)
    out = run("nn.conv", {"input": x, "filter": w}, attributes)["output"]
    np.testing.assert_allclose(out, ref_conv(x, w, **attributes), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("data_format", ["NCX", "NXC", "XCN"])
@pytest.mark.parametrize("filter_format", ["NCX", "NXC", "XCN", "CXN"])
def test_conv_data_and_filter_formats(rng, data_format, filter_format):
    canonical_x = rng.standard_normal((2, 4, 5, 4))       # [b, c, h, w]
    canonical_w = rng.standard_normal((2, 2, 3, 2))       # [n, c / groups, h, w]
    bias = rng.standard_normal(2)
    x = _from_ncx(canonical_x, data_format)
    w = {"NCX": canonical_w, "NXC": np.moveaxis(canonical_w, 1, -1),
         "XCN": np.moveaxis(canonical_w, [0, 1], [-1, -2]),
         "CXN": np.moveaxis(canonical_w, [0, 1], [-1, 0])}[filter_format]
    attributes = {"groups": 2, "stride": [2, 1], "data_format": data_format,
                  "filter_format": filter_format}
    out = run("nn.conv", {"input": x, "filter": w, "bias": bias}, attributes)["output"]
    expected = _from_ncx(ref_conv(canonical_x, canonical_w, bias, stride=[2, 1], groups=2),
                         data_format)
    np.testing.assert_allclose(out, expected, rtol=1e-12, atol=1e-12)


def test_conv_bias_size_is_checked(rng):
    with pytest.raises(Diagnostic, match="bias-size must equal output-channels"):
        run("nn.conv", {"input": rng.standard_normal((1, 2, 4, 4)),
                        "filter": rng.standard_normal((3, 2, 2, 2)),
                        "bias": rng.standard_normal(2)})


def test_conv_groups_must_divide_channels(rng):
    with pytest.raises(Diagnostic, match="input-channels must equal filter-channels"):
        run("nn.conv", {"input": rng.standard_normal((1, 3, 4, 4)),
                        "filter": rng.standard_normal((4, 2, 2, 2))}, {"groups": 2})


# ----------------------------------------------------------------------------- deconv

DECONV_CASES = [
    ((1, 2, 3, 3), (2, 3, 3, 3), {}),
    ((2, 2, 3, 2), (2, 2, 3, 3), {"stride": [2, 2]}),
    ((1, 2, 3, 3), (2, 1, 2, 3), {"stride": [2, 1], "dilation": [1, 2],
                                  "padding": [0, 1, 1, 1]}),
    ((1, 2, 3, 3), (2, 2, 3, 3), {"stride": [2, 2], "output_size": [6, 6]}),
    ((1, 2, 4, 3), (2, 2, 2, 2), {"padding_align": "LOWER", "stride": [3, 2]}),
    ((1, 4, 3, 3), (4, 1, 3, 2), {"groups": 2}),
    ((1, 3, 3, 2), (3, 2, 2, 2), {"groups": 0, "stride": [2, 2]}),
    ((1, 2, 4), (2, 3, 3), {"stride": [2], "padding": [1, 0]}),
]


@pytest.mark.parametrize("input_shape, filter_shape, attributes", DECONV_CASES)
def test_deconv(rng, input_shape, filter_shape, attributes):
    x = rng.standard_normal(input_shape)
    w = rng.standard_normal(filter_shape)
    out = run("nn.deconv", {"input": x, "filter": w}, attributes)["output"]
    np.testing.assert_allclose(out, ref_deconv(x, w, **attributes), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("data_format, filter_format", [("NXC", "XCN"), ("XCN", "CXN"),
                                                        ("NCX", "NXC")])
def test_deconv_formats_and_bias(rng, data_format, filter_format):
    canonical_x = rng.standard_normal((2, 4, 3, 2))
    canonical_w = rng.standard_normal((4, 1, 2, 3))       # [ic, oc / groups, h, w]
    bias = rng.standard_normal(2)
    x = _from_ncx(canonical_x, data_format)
    w = {"NCX": canonical_w, "NXC": np.moveaxis(canonical_w, 1, -1),
         "XCN": np.moveaxis(canonical_w, [0, 1], [-1, -2]),
         "CXN": np.moveaxis(canonical_w, [0, 1], [-1, 0])}[filter_format]
    attributes = {"groups": 2, "stride": [2, 1], "data_format": data_format,
                  "filter_format": filter_format}
    # contiguous copies: the vector engine fails on a non-contiguous array (reported)
    x, w = np.ascontiguousarray(x), np.ascontiguousarray(w)
    out = run("nn.deconv", {"input": x, "filter": w, "bias": bias}, attributes)["output"]
    expected = _from_ncx(ref_deconv(canonical_x, canonical_w, bias, stride=[2, 1], groups=2),
                         data_format)
    np.testing.assert_allclose(out, expected, rtol=1e-12, atol=1e-12)


def test_deconv_is_the_adjoint_of_conv(rng):
    """<conv(x), y> == <x, deconv(y)> with the same filter, strides and padding."""
    x = rng.standard_normal((1, 2, 5, 5))
    w = rng.standard_normal((3, 2, 3, 3))
    attributes = {"stride": [2, 2], "padding": [1, 1, 1, 1]}
    y = rng.standard_normal(ref_conv(x, w, **attributes).shape)
    conv = run("nn.conv", {"input": x, "filter": w}, attributes)["output"]
    deconv = run("nn.deconv", {"input": y, "filter": w},
                 {**attributes, "output_size": [5, 5]})["output"]
    assert math.isclose(np.sum(conv * y), np.sum(x * deconv), rel_tol=1e-12)


# ----------------------------------------------------------------------------- pooling


def ref_pool(x, combine, initial, size, axes=None, stride=None, dilation=None, padding=None,
             padding_align="UPPER", ceil_mode=False):
    """Combine the non-padded window elements over `axes` (default: all but the first two)."""
    axes = [a % x.ndim for a in (axes if axes is not None else range(2, x.ndim))]
    k = len(axes)
    stride = stride or [1] * k
    dilation = dilation or [1] * k
    extents = [x.shape[a] for a in axes]
    front, out_extents = _window_geometry(extents, size, stride, dilation, padding,
                                          padding_align, ceil_mode)
    shape = list(x.shape)
    for a, extent in zip(axes, out_extents):
        shape[a] = extent
    out = np.full(shape, initial)
    for o in itertools.product(*map(range, out_extents)):
        target = [slice(None)] * x.ndim
        for a, position in zip(axes, o):
            target[a] = position
        for j in itertools.product(*map(range, size)):
            source = [slice(None)] * x.ndim
            inside = True
            for n, a in enumerate(axes):
                position = stride[n] * o[n] + dilation[n] * j[n] - front[n]
                inside = inside and 0 <= position < x.shape[a]
                source[a] = position
            if inside:
                out[tuple(target)] = combine(out[tuple(target)], x[tuple(source)])
    return out


def ref_sum_pool(x, **attributes):
    return ref_pool(x, np.add, 0.0, **attributes)


def ref_max_pool(x, **attributes):
    return ref_pool(x, np.maximum, -np.inf, **attributes)


def ref_avg_pool(x, ignore_border=True, **attributes):
    total = ref_sum_pool(x, **attributes)
    if ignore_border:
        return total / ref_sum_pool(np.ones_like(x), **attributes)
    return total / np.prod(attributes["size"])


POOL_CASES = [
    ((1, 2, 5, 5), {"size": [2, 2]}),
    ((1, 2, 5, 6), {"size": [3, 3], "stride": [2, 2]}),
    ((1, 1, 5, 6), {"size": [3, 2], "stride": [2, 3], "ceil_mode": True}),
    ((1, 1, 7, 5), {"size": [2, 2], "dilation": [2, 1], "padding": [1, 0, 2, 1]}),
    ((1, 2, 6, 5), {"size": [2, 3], "stride": [2, 2], "padding_align": "LOWER"}),
    ((2, 3, 4), {"size": [2, 3], "axes": [0, -1], "padding": [1, 1, 0, 1]}),
    ((3, 5), {"size": [3], "axes": [1], "stride": [2], "padding": [1, 1]}),
    ((1, 1, 5, 6), {"size": [2, 3], "stride": [2, 2], "padding": [0, 1, 0, 0],
                    "ceil_mode": True}),
]


@pytest.mark.parametrize("shape, attributes", POOL_CASES)
def test_max_pool(rng, shape, attributes):
    x = rng.standard_normal(shape)
    out = run("nn.max_pool", {"input": x}, attributes)["output"]
    np.testing.assert_array_equal(out, ref_max_pool(x, **attributes))


def test_max_pool_ignores_padding_even_for_negative_inputs(rng):
    x = -1.0 - rng.random((1, 1, 3, 3))
    attributes = {"size": [3, 3], "padding": [1, 1, 1, 1]}
    out = run("nn.max_pool", {"input": x}, attributes)["output"]
    assert np.all(out < 0.0)
    np.testing.assert_array_equal(out, ref_max_pool(x, **attributes))


@pytest.mark.parametrize("shape, attributes", POOL_CASES)
def test_sum_pool(rng, shape, attributes):
    x = rng.standard_normal(shape)
    out = run("nn.sum_pool", {"input": x}, attributes)["output"]
    np.testing.assert_allclose(out, ref_sum_pool(x, **attributes), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("shape, attributes", POOL_CASES)
@pytest.mark.parametrize("ignore_border", [True, False])
def test_avg_pool(rng, shape, attributes, ignore_border):
    x = rng.standard_normal(shape)
    out = run("nn.avg_pool", {"input": x}, {**attributes, "ignore_border": ignore_border})
    np.testing.assert_allclose(out["output"], ref_avg_pool(x, ignore_border, **attributes),
                               rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("shape, attributes", POOL_CASES[:1] + POOL_CASES[2:6])
@pytest.mark.parametrize("p", [1.0, 2.0, 3.5])
def test_lp_pool(rng, shape, attributes, p):
    x = rng.standard_normal(shape)
    out = run("nn.lp_pool", {"input": x}, {**attributes, "p": p})["output"]
    expected = ref_sum_pool(np.abs(x) ** p, **attributes) ** (1.0 / p)
    np.testing.assert_allclose(out, expected, rtol=1e-12, atol=1e-12)


def test_lp_pool_p_must_be_positive(rng):
    with pytest.raises(Diagnostic, match="'p' must be positive"):
        run("nn.lp_pool", {"input": rng.standard_normal((1, 1, 4, 4))},
            {"size": [2, 2], "p": 0.0})


@pytest.mark.parametrize("attributes, message", [
    ({"size": [2, 2], "stride": [0, 1]}, "'stride' must be positive"),
    ({"size": [2, 2], "axes": [2, 2]}, "axes must be distinct"),
    ({"size": [2], "axes": [4]}, "axes must be between"),
    ({"size": [6, 2]}, "padded input-size must be greater"),
    ({"size": [2, 2], "padding_align": "MIDDLE"}, "'padding_align' must be one of"),
])
def test_pool_attributes_are_checked(rng, attributes, message):
    with pytest.raises(Diagnostic, match=message):
        run("nn.max_pool", {"input": rng.standard_normal((1, 1, 4, 4))},
            {"padding": [0] * (2 * len(attributes["size"])), **attributes})


# ----------------------------------------------------------------------------- composed of math

# Operators below are compositions that call math.sqrt, math.exp or math.tanh.


@pytest.mark.parametrize("shape, attributes", POOL_CASES[:1] + POOL_CASES[3:6])
@pytest.mark.parametrize("ignore_border", [True, False])
def test_rms_pool(rng, shape, attributes, ignore_border):
    x = rng.standard_normal(shape)
    out = run("nn.rms_pool", {"input": x},
                       {**attributes, "ignore_border": ignore_border})
    expected = np.sqrt(ref_avg_pool(x * x, ignore_border, **attributes))
    np.testing.assert_allclose(out["output"], expected, rtol=1e-12, atol=1e-12)




# ----------------------------------------------------------------------------- normalization


def _along(vector: np.ndarray, axis: int, rank: int) -> np.ndarray:
    shape = [1] * rank
    shape[axis] = len(vector)
    return vector.reshape(shape)


@pytest.mark.parametrize("shape, channel_axis, optional", [
    ((2, 3, 4), None, ()),
    ((2, 3, 2, 2), 1, ("scale", "bias")),
    ((2, 4, 3), -1, ("scale",)),
    ((3, 2), 0, ("bias",)),
])
def test_batch_norm(rng, shape, channel_axis, optional):
    x = rng.standard_normal(shape)
    axis = 1 if channel_axis is None else channel_axis
    c = shape[axis]
    inputs = {"input": x, "mean": rng.standard_normal(c), "variance": rng.random(c) + 0.1}
    for name in optional:
        inputs[name] = rng.standard_normal(c)
    attributes = {"epsilon": 1e-3} if channel_axis is None else \
        {"channel_axis": channel_axis}
    epsilon = attributes.get("epsilon", 1e-5)
    rank = len(shape)
    expected = (x - _along(inputs["mean"], axis, rank)) / \
        np.sqrt(_along(inputs["variance"], axis, rank) + epsilon)
    if "scale" in inputs:
        expected = expected * _along(inputs["scale"], axis, rank)
    if "bias" in inputs:
        expected = expected + _along(inputs["bias"], axis, rank)
    out = run("nn.batch_norm", inputs, attributes)["output"]
    np.testing.assert_allclose(out, expected, rtol=1e-12, atol=1e-12)


def test_batch_norm_channel_count_is_checked(rng):
    with pytest.raises(Diagnostic, match="input shape at channel axis must match"):
        run("nn.batch_norm",
                     {"input": rng.standard_normal((2, 3, 4)), "mean": np.zeros(4),
                      "variance": np.ones(4)})


@pytest.mark.parametrize("shape, axes, optional", [
    ((2, 3, 4), None, ()),
    ((2, 3, 2, 3), [2, 3], ("scale", "bias")),
    ((2, 3, 4), [0, -1], ("bias",)),
])
def test_mean_variance_norm(rng, shape, axes, optional):
    x = rng.standard_normal(shape)
    inputs = {"input": x}
    for name in optional:
        inputs[name] = rng.standard_normal(shape[1])
    attributes = {} if axes is None else {"axes": axes, "epsilon": 1e-3}
    reduced = tuple(range(2, len(shape))) if axes is None else tuple(axes)
    epsilon = attributes.get("epsilon", 1e-5)
    mean = x.mean(axis=reduced, keepdims=True)
    variance = ((x - mean) ** 2).mean(axis=reduced, keepdims=True)
    expected = (x - mean) / np.sqrt(variance + epsilon)
    if "scale" in inputs:
        expected = expected * _along(inputs["scale"], 1, len(shape))
    if "bias" in inputs:
        expected = expected + _along(inputs["bias"], 1, len(shape))
    out = run("nn.mean_variance_norm", inputs, attributes)["output"]
    np.testing.assert_allclose(out, expected, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("axes, bias, epsilon", [
    ([1], None, None), ([0, -1], 0.5, None), ([-1], None, 3.0), ([1, 2], 0.1, 0.2)])
def test_l2_norm(rng, axes, bias, epsilon):
    x = rng.standard_normal((2, 3, 4))
    attributes = {"axes": axes}
    denominator = np.sqrt((x * x).sum(axis=tuple(axes), keepdims=True))
    if bias is not None:
        attributes["bias"] = bias
        denominator = denominator + bias
    if epsilon is not None:
        attributes["epsilon"] = epsilon
        denominator = np.maximum(denominator, epsilon)
    out = run("nn.l2_norm", {"input": x}, attributes)["output"]
    np.testing.assert_allclose(out, x / denominator, rtol=1e-12)


@pytest.mark.parametrize("shape, axes", [((2, 3), None), ((2, 3, 4), [-1]), ((2, 3, 4), [0, 2])])
def test_softmax(rng, shape, axes):
    x = rng.standard_normal(shape) * 5.0
    reduced = (1,) if axes is None else tuple(axes)
    exped = np.exp(x - x.max(axis=reduced, keepdims=True))
    expected = exped / exped.sum(axis=reduced, keepdims=True)
    attributes = {} if axes is None else {"axes": axes}
    out = run("nn.softmax", {"input": x}, attributes)["output"]
    np.testing.assert_allclose(out, expected, rtol=1e-12, atol=1e-15)


def test_softmax_of_large_values_does_not_overflow():
    x = np.array([[1000.0, 1001.0, 1002.0]])
    expected = np.exp([-2.0, -1.0, 0.0]) / np.exp([-2.0, -1.0, 0.0]).sum()
    out = run("nn.softmax", {"input": x})["output"]
    np.testing.assert_allclose(out[0], expected, rtol=1e-12)


# ----------------------------------------------------------------------------- LSTM


def ref_lstm(X, W, R, B, h0, c0, steps=None):
    """Gates in the spec's split order i, f, g, o; item k runs steps[k] steps (all by default).
    Returns Y (steps x b x n), the last h and the last c."""
    def sigmoid(v):
        return 1.0 / (1.0 + np.exp(-v))

    s, b, _ = X.shape
    counts = [s] * b if steps is None else [int(v) for v in steps]
    Y = np.zeros((max(counts), b, R.shape[1]))
    h_last, c_last = h0.copy(), c0.copy()
    for k in range(b):
        h, c = h0[k], c0[k]
        for t in range(counts[k]):
            gates = W @ X[t, k] + B + R @ h
            i, f, g, o = np.split(gates, 4)
            c = sigmoid(f) * c + sigmoid(i) * np.tanh(g)
            h = sigmoid(o) * np.tanh(c)
            Y[t, k] = h
        h_last[k], c_last[k] = h, c
    return Y, h_last, c_last


def _lstm_data(rng, s=3, b=2, c=3, n=2):
    return {"X": rng.standard_normal((s, b, c)), "W": rng.standard_normal((4 * n, c)) * 0.5,
            "R": rng.standard_normal((4 * n, n)) * 0.5, "B": rng.standard_normal(4 * n) * 0.1,
            "h0": rng.standard_normal((b, n)), "c0": rng.standard_normal((b, n))}


@pytest.mark.parametrize("initial_state", [True, False])
def test_lstm(rng, initial_state):
    data = _lstm_data(rng)
    if not initial_state:       # h0 and c0 default to 0.0
        data["h0"], data["c0"] = np.zeros((2, 2)), np.zeros((2, 2))
        inputs = {k: v for k, v in data.items() if k not in ("h0", "c0")}
    else:
        inputs = data
    out = run("nn.lstm", inputs)
    for name, expected in zip(("Y", "hN", "cN"), ref_lstm(**data)):
        np.testing.assert_allclose(out[name], expected, rtol=1e-12, atol=1e-14)


def test_lstm_with_equal_step_counts(rng):
    data = _lstm_data(rng, s=4)
    out = run("nn.lstm", {**data, "steps": np.array([2, 2])})
    assert out["Y"].shape == (2, 2, 2)
    for name, expected in zip(("Y", "hN", "cN"), ref_lstm(**data, steps=[2, 2])):
        np.testing.assert_allclose(out[name], expected, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("steps", [[1, 3], [3, 0, 2], [0, 0], [4, 2]])
def test_lstm_with_different_step_counts(rng, steps):
    """Sequences of different lengths (0 included): Y has the largest count's extent, zeros past
    each sequence's end; hN, cN are each sequence's last state."""
    data = _lstm_data(rng, s=4, b=len(steps))
    out = run("nn.lstm", {**data, "steps": np.array(steps)})
    assert out["Y"].shape == (max(steps), len(steps), 2)
    for name, expected in zip(("Y", "hN", "cN"), ref_lstm(**data, steps=steps)):
        np.testing.assert_allclose(out[name], expected, rtol=1e-12, atol=1e-14)


def test_prelu_axis_out_of_range_is_its_axis_diagnostic():
    with pytest.raises(Diagnostic, match="axis must be between -x.rank") as error:
        run("nn.prelu", {"x": np.zeros((2, 3)), "alpha": np.zeros(3)}, {"axis": 3})
    assert error.value.code == "E0307"


def test_prelu_alpha_length_mismatch():
    with pytest.raises(Diagnostic, match="the length of 'alpha' must equal") as error:
        run("nn.prelu", {"x": np.zeros((2, 3)), "alpha": np.zeros(4)})
    assert error.value.code == "E0307"


# ----------------------------------------------------------------------------- activations


def test_relu_plain_leaky_and_clipped(rng):
    x = rng.standard_normal((3, 4)) * 3.0
    np.testing.assert_array_equal(run("nn.relu", {"x": x})["y"], np.maximum(x, 0.0))
    np.testing.assert_allclose(run("nn.relu", {"x": x}, {"alpha": 0.1})["y"],
                               np.where(x < 0.0, 0.1 * x, x))
    np.testing.assert_array_equal(run("nn.relu", {"x": x}, {"max": 2.0})["y"],
                                  np.clip(x, 0.0, 2.0))
    # the spec's formula max(min(x, max), alpha * x): above max / alpha, alpha * x wins
    out = run("nn.relu", {"x": x}, {"alpha": 0.25, "max": 1.5})["y"]
    np.testing.assert_allclose(out, np.maximum(np.minimum(x, 1.5), 0.25 * x))
    assert out.max() > 1.5


def test_relu_attributes_are_checked(rng):
    with pytest.raises(Diagnostic, match="'alpha' must be between 0 and 1"):
        run("nn.relu", {"x": rng.standard_normal(3)}, {"alpha": 1.5})
    with pytest.raises(Diagnostic, match="'max' must be positive"):
        run("nn.relu", {"x": rng.standard_normal(3)}, {"max": 0.0})


@pytest.mark.parametrize("axis, shape", [(1, (2, 3, 4)), (-1, (2, 3, 4)), (0, (3,))])
def test_prelu(rng, axis, shape):
    x = rng.standard_normal(shape)
    alpha = rng.random(shape[axis])
    broadcast = [1] * len(shape)
    broadcast[axis] = shape[axis]
    expected = np.where(x < 0.0, alpha.reshape(broadcast) * x, x)
    attributes = {} if axis == 1 else {"axis": axis}
    np.testing.assert_allclose(run("nn.prelu", {"x": x, "alpha": alpha}, attributes)["y"],
                               expected)


@pytest.mark.parametrize("theta", [None, 0.5])
def test_thresholded_relu(rng, theta):
    x = rng.standard_normal((3, 5))
    attributes = {} if theta is None else {"theta": theta}
    expected = np.where(x > (theta or 0.0), x, 0.0)
    np.testing.assert_array_equal(run("nn.thresholded_relu", {"x": x}, attributes)["y"],
                                  expected)


_erf = np.vectorize(math.erf)


@pytest.mark.parametrize("approximate", [None, "TANH", "SIGMOID"])
def test_gelu(rng, approximate):
    x = rng.standard_normal((2, 5)) * 2.0
    if approximate is None:
        expected = 0.5 * x * (1.0 + _erf(x / math.sqrt(2.0)))
    elif approximate == "TANH":
        expected = 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))
    else:
        expected = x / (1.0 + np.exp(-1.702 * x))
    attributes = {} if approximate is None else {"approximate": approximate}
    np.testing.assert_allclose(run("nn.gelu", {"x": x}, attributes)["y"], expected,
                               rtol=1e-12, atol=1e-15)


def test_gelu_approximation_is_checked(rng):
    with pytest.raises(Diagnostic, match="'approximate' must be one of"):
        run("nn.gelu", {"x": rng.standard_normal(3)}, {"approximate": "ERF"})


UNARY = {
    "sigmoid": ({}, lambda x: 1.0 / (1.0 + np.exp(-x))),
    "silu": ({}, lambda x: x / (1.0 + np.exp(-x))),
    "softplus": ({}, lambda x: np.log1p(np.exp(x))),
    "erf": ({}, _erf),
    "elu": ({}, lambda x: np.where(x < 0.0, np.expm1(x), x)),
    "selu": ({}, lambda x: 1.05070102 * np.where(x < 0.0, 1.67326319 * np.expm1(x), x)),
    "hard_sigmoid": ({}, lambda x: np.clip(0.2 * x + 0.5, 0.0, 1.0)),
}

UNARY_WITH_ATTRIBUTES = {
    "elu": ({"alpha": 0.5}, lambda x: np.where(x < 0.0, 0.5 * np.expm1(x), x)),
    "selu": ({"alpha": 2.0, "lambda": 0.5},
             lambda x: 0.5 * np.where(x < 0.0, 2.0 * np.expm1(x), x)),
    "hard_sigmoid": ({"alpha": 0.5, "beta": 0.25}, lambda x: np.clip(0.5 * x + 0.25, 0, 1)),
}


@pytest.mark.parametrize("name", sorted(UNARY))
@pytest.mark.parametrize("shape", [(7,), (2, 3, 2)])
def test_unary_activation(rng, name, shape):
    attributes, reference = UNARY[name]
    x = rng.standard_normal(shape) * 3.0
    np.testing.assert_allclose(run(f"nn.{name}", {"x": x}, attributes)["y"], reference(x),
                               rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("name", sorted(UNARY_WITH_ATTRIBUTES))
def test_unary_activation_attributes(rng, name):
    attributes, reference = UNARY_WITH_ATTRIBUTES[name]
    x = rng.standard_normal((3, 4)) * 3.0
    np.testing.assert_allclose(run(f"nn.{name}", {"x": x}, attributes)["y"], reference(x),
                               rtol=1e-12, atol=1e-15)


def test_activations_at_special_values():
    x = np.array([0.0, -0.0, np.inf, -np.inf, 40.0, -40.0])
    np.testing.assert_allclose(run("nn.sigmoid", {"x": x})["y"], 1.0 / (1.0 + np.exp(-x)),
                               rtol=1e-15, atol=0.0)
    np.testing.assert_array_equal(run("nn.relu", {"x": x})["y"], np.maximum(x, 0.0))
    np.testing.assert_array_equal(run("nn.erf", {"x": x})["y"], _erf(x))


@pytest.mark.parametrize("shape, attributes", [
    ((1, 5, 3), {"size": [3]}),
    ((2, 6, 2), {"size": [4], "alpha": 0.5, "beta": 0.75, "bias": 2.0}),
    ((1, 3, 4, 4), {"size": [3, 2], "axes": [2, -1], "alpha": 1e-2}),
])
def test_local_response_norm(rng, shape, attributes):
    x = rng.standard_normal(shape)
    axes = attributes.get("axes", [1])
    size = attributes["size"]
    # the window is padded (size - 1) / 2 in front and the rest behind; the mean divides
    # by the whole window volume (padding counted), as avg_pool{ignore_border=false}
    padding = [(s - 1) // 2 for s in size] + [s // 2 for s in size]
    mean = ref_avg_pool(x * x, ignore_border=False, size=size, axes=axes, padding=padding)
    expected = x / (attributes.get("bias", 1.0) + attributes.get("alpha", 1.0) * mean) ** \
        attributes.get("beta", 0.5)
    np.testing.assert_allclose(run("nn.local_response_norm", {"input": x}, attributes)["output"],
                               expected, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("axes, bias, epsilon", [
    ([1], None, None), ([0, -1], 0.5, None), ([-1], None, 4.0), ([1, 2], 0.1, 0.2)])
def test_l1_norm(rng, axes, bias, epsilon):
    x = rng.standard_normal((2, 3, 4))
    attributes = {"axes": axes}
    denominator = np.abs(x).sum(axis=tuple(axes), keepdims=True)
    if bias is not None:
        attributes["bias"] = bias
        denominator = denominator + bias
    if epsilon is not None:
        attributes["epsilon"] = epsilon
        denominator = np.maximum(denominator, epsilon)
    np.testing.assert_allclose(run("nn.l1_norm", {"input": x}, attributes)["output"],
                               x / denominator, rtol=1e-12)


def test_negative_automatic_padding_depends_on_the_profile(rng):
    """A 1x1 filter with stride 2 over 4 positions: the spec's total padding is
    (4 / 2 - 1) * 2 + 1 - 4 = -1; its front part -1 / 2 rounds down to -1 under profile
    'spec' (reading positions 1 and 3) and truncates to 0 under 'khronos' (positions 0, 2)."""
    x = rng.standard_normal((1, 1, 4))
    w = np.ones((1, 1, 1))
    spec = run("nn.conv", {"input": x, "filter": w}, {"stride": [2]}, profile="spec")
    khronos = run("nn.conv", {"input": x, "filter": w}, {"stride": [2]}, profile="khronos")
    np.testing.assert_array_equal(spec["output"], x[:, :, 1::2])
    np.testing.assert_array_equal(khronos["output"], x[:, :, 0::2])
    pooled = run("nn.max_pool", {"input": x}, {"size": [1], "stride": [2]}, profile="khronos")
    np.testing.assert_array_equal(pooled["output"], x[:, :, 0::2])


@pytest.mark.parametrize("input_shape, filter_shape, bias_size, message", [
    ((1, 3, 3, 3), (2, 2, 2, 2), None, "input-channels must equal the filter's"),
    ((1, 2, 3, 3), (2, 2, 2, 2), 3, "bias-size must equal output-channels"),
    ((1, 2, 3, 3), (2, 2, 2, 2), None, "'output_size' must be compatible"),
])
def test_deconv_shapes_are_checked(rng, input_shape, filter_shape, bias_size, message):
    inputs = {"input": rng.standard_normal(input_shape),
              "filter": rng.standard_normal(filter_shape)}
    if bias_size is not None:
        inputs["bias"] = rng.standard_normal(bias_size)
    attributes = {"output_size": [9, 9]} if "output_size" in message else {}
    with pytest.raises(Diagnostic, match=message):
        run("nn.deconv", inputs, attributes)


@pytest.mark.parametrize("name", ["nn.conv", "nn.deconv"])
@pytest.mark.parametrize("attribute, value", [("data_format", "NHWC"),
                                              ("filter_format", "OIHW"),
                                              ("padding_align", "SAME")])
def test_conv_format_names_are_checked_first(rng, name, attribute, value):
    with pytest.raises(Diagnostic, match=f"'{attribute}' must be one of"):
        run(name, {"input": rng.standard_normal((1, 2, 4, 4)),
                   "filter": rng.standard_normal((2, 2, 3, 3))}, {attribute: value})


# ----------------------------------------------------------------------------- from a user graph

GRAPH = """import nn;

graph net {
    @input {
        x: real[1,2,6,6];
        w: real[3,2,3,3];
        b: real[3];
    }
    @output {
        y: real[1,3,2,2];
    }
    @compose {
        c = nn.conv{stride=2, padding=[1,1,1,1]}(x, w, b);
        r = nn.relu{alpha=0.1}(c);
        y = nn.max_pool{size=[2,2], stride=[1,1], padding=[0,0,0,0]}(r);
    }
}
"""


def test_user_graph_through_the_command_line(rng, tmp_path):
    """`import nn;` from a user file, run by `refinterp eval` (default engine)."""
    (tmp_path / "net.sknd").write_text(GRAPH)
    arrays = {"x": rng.standard_normal((1, 2, 6, 6)), "w": rng.standard_normal((3, 2, 3, 3)),
              "b": rng.standard_normal(3)}
    np.savez(tmp_path / "in.npz", **arrays)
    assert main(["eval", str(tmp_path / "net.sknd"), "--inputs", str(tmp_path / "in.npz"),
                 "-o", str(tmp_path / "out.npz")]) == 0
    conv = ref_conv(arrays["x"], arrays["w"], arrays["b"], stride=[2, 2], padding=[1, 1, 1, 1])
    relu = np.where(conv < 0.0, 0.1 * conv, conv)
    expected = ref_max_pool(relu, size=[2, 2], padding=[0, 0, 0, 0])
    with np.load(tmp_path / "out.npz") as out:
        np.testing.assert_allclose(out["y"], expected, rtol=1e-12, atol=1e-12)
