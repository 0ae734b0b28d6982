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

from refinterp.diagnostics import Diagnostic

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
