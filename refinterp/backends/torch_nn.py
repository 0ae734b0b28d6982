"""Torch translations of the `nn`, `algo` and `quant` stdlib operators.

Each translation's docstring gives its mapping: SkriptND attribute -> torch argument.
Window geometry (automatic padding, front/back split) is SkriptND's, computed here from the
attributes exactly as nn.sknd's @using does; the computation on the window is torch's.
"""

from __future__ import annotations

import math
from typing import Any

import torch
import torch.nn.functional as F

from refinterp.backends.torch_common import (INT, Call, axis_of, require, translation,
                                             unsupported)

# --------------------------------------------------------------------------- geometry


def _per_axis(value: Any, k: int, default: int = 1) -> list[int]:
    """An int pack attribute of k items (a single value repeated)."""
    if value is None:
        return [default] * k
    values = list(value) if isinstance(value, (list, tuple)) else [value]
    return values * k if len(values) == 1 and k > 1 else values


def _padding(extents: list[int], size: list[int], stride: list[int], dilation: list[int],
             padding: list[int] | None, align: str, ceil_mode: bool) -> tuple[list, list]:
    """(front, back) per axis: the given padding [front.., back..], else SkriptND's automatic
    total ((ceil_mode ? x \\ s : x / s) - 1) * s + fd - x split front = total / 2 ('UPPER',
    floor) or total \\ 2 ('LOWER', ceiling), profile spec's integer rounding."""
    k = len(extents)
    if padding is not None:
        return list(padding[:k]), list(padding[k:])
    require(align in ("UPPER", "LOWER"), f"padding_align {align!r}")
    front, back = [], []
    for x, f, s, dil in zip(extents, size, stride, dilation):
        fd = (f - 1) * dil + 1
        blocks = -(-x // s) if ceil_mode else x // s
        total = (blocks - 1) * s + fd - x
        first = total // 2 if align == "UPPER" else -(-total // 2)
        front.append(first)
        back.append(total - first)
    return front, back


def _pairs(front: list[int], back: list[int]) -> list[int]:
    """F.pad's argument (last axis first) for trailing axes padded front/back."""
    pairs: list[int] = []
    for f, b in zip(reversed(front), reversed(back)):
        pairs += [f, b]
    return pairs


def _trailing(x: Any, axes: list[int], function: Any) -> Any:
    """Apply `function` to `x` with `axes` moved last and every other axis flattened into a
    batch of one channel ([N, 1, spatial..], the layout torch's pooling and interpolation
    take); the result is moved back."""
    d = x.dim()
    axes = [axis_of(a, d) for a in axes]
    moved = x.movedim(axes, list(range(d - len(axes), d)))
    lead = list(moved.shape[:d - len(axes)])
    y = function(moved.reshape([-1, 1] + list(moved.shape[d - len(axes):])))
    y = y.reshape(lead + list(y.shape[2:]))
    return y.movedim(list(range(d - len(axes), d)), axes)


# --------------------------------------------------------------------------- linear, conv


@translation("nn.linear", "output")
def linear(c: Call) -> Any:
    """No attributes: F.linear(input, weight=filter, bias)."""
    return F.linear(c["input"], c["filter"], c.get("bias"))


CONV = {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}
DECONV = {1: F.conv_transpose1d, 2: F.conv_transpose2d, 3: F.conv_transpose3d}


def _formats(c: Call) -> bool:
    """True for data_format NXC; only filter_format NCX (torch's weight layout) is mapped."""
    data, filt = c.attr("data_format", "NCX"), c.attr("filter_format", "NCX")
    require(data in ("NCX", "NXC"), f"data_format {data!r}")
    require(filt == "NCX", f"filter_format {filt!r}")
    return data == "NXC"


@translation("nn.conv", "output")
def conv(c: Call) -> Any:
    """stride -> stride, dilation -> dilation, groups -> groups (0: input channels),
    padding/padding_align -> F.pad zeros (front, back) (torch's own `padding` when
    symmetric), bias -> bias, data_format NXC -> movedim; ceil_mode=true not mapped (torch
    convolutions have none): F.conv{1,2,3}d."""
    nxc = _formats(c)
    x, w = c["input"], c["filter"]
    if nxc:
        x = x.movedim(-1, 1)
    d = x.dim() - 2
    require(d in CONV, f"a {d}-D convolution")
    require(not c.attr("ceil_mode", False), "ceil_mode=true for a convolution")
    stride, dilation = _per_axis(c.attr("stride"), d), _per_axis(c.attr("dilation"), d)
    if any(s <= 0 for s in stride) or any(v <= 0 for v in dilation):
        # the automatic padding below divides by the stride before torch sees it
        return CONV[d](x, w, c.get("bias"), stride, 0, dilation, c.attr("groups", 1) or 1)
    front, back = _padding(list(x.shape[2:]), list(w.shape[2:]), stride, dilation,
                           c.ints("padding"), c.attr("padding_align", "UPPER"), False)
    groups = c.attr("groups", 1) or x.shape[1]
    if front == back:
        y = CONV[d](x, w, c.get("bias"), stride, front, dilation, groups)
    else:
        y = CONV[d](F.pad(x, _pairs(front, back)), w, c.get("bias"), stride, 0, dilation,
                    groups)
    return y.movedim(1, -1) if nxc else y


@translation("nn.deconv", "output")
def deconv(c: Call) -> Any:
    """stride, dilation, groups (0: input channels) -> the same arguments of
    F.conv_transpose{1,2,3}d with padding 0; padding / padding_align (automatic total
    fd - stride) and output_size -> a crop of `front` cells and length output_size (F.pad
    with negative / positive widths), then the bias added; data_format NXC -> movedim."""
    nxc = _formats(c)
    x, w, bias = c["input"], c["filter"], c.get("bias")
    if nxc:
        x = x.movedim(-1, 1)
    d = x.dim() - 2
    require(d in DECONV, f"a {d}-D deconvolution")
    stride, dilation = _per_axis(c.attr("stride"), d), _per_axis(c.attr("dilation"), d)
    groups = c.attr("groups", 1) or x.shape[1]
    full = DECONV[d](x, w, None, stride, 0, 0, groups, dilation)
    padding = c.ints("padding")
    fds = [(f - 1) * v + 1 for f, v in zip(w.shape[2:], dilation)]
    if padding is None:
        totals = [fd - s for fd, s in zip(fds, stride)]
        align = c.attr("padding_align", "UPPER")
        require(align in ("UPPER", "LOWER"), f"padding_align {align!r}")
        fronts = [t // 2 if align == "UPPER" else -(-t // 2) for t in totals]
    else:
        totals = [a + b for a, b in zip(padding[:d], padding[d:])]
        fronts = list(padding[:d])
    sizes = [(i - 1) * s + fd - t for i, s, fd, t in zip(x.shape[2:], stride, fds, totals)]
    given = c.ints("output_size")
    if given is not None:
        # torch's own output_size rule (nn.ConvTranspose*d.forward(output_size=...)), on the
        # uncropped extent output_size + total padding: within stride - 1 of the minimum
        torch.nn.modules.conv._ConvTransposeNd._output_padding(
            None, x, [o + t for o, t in zip(given, totals)], stride, [0] * d,
            list(w.shape[2:]), d, dilation)
        sizes = given
    backs = [size - (n - f) for size, n, f in zip(sizes, full.shape[2:], fronts)]
    y = F.pad(full, _pairs([-f for f in fronts], backs))
    if bias is not None:
        y = y + bias.reshape([-1] + [1] * d)
    return y.movedim(1, -1) if nxc else y


# --------------------------------------------------------------------------- pooling


def _pool_geometry(c: Call, x: Any) -> tuple[list[int], list[int], list[int], list[int],
                                              list[int], list[int]]:
    """(axes, size, stride, dilation, front, back) of a pooling case, axes non-negative."""
    axes = [axis_of(a, x.dim()) for a in (c.ints("axes") or list(range(2, x.dim())))]
    k = len(axes)
    size = c.ints("size")
    stride, dilation = _per_axis(c.attr("stride"), k), _per_axis(c.attr("dilation"), k)
    require(c.ints("padding") is not None or all(s > 0 for s in stride),
            f"stride {stride} in SkriptND's automatic padding (it divides by the stride "
            f"before torch sees it)")
    front, back = _padding([x.shape[a] for a in axes], size, stride, dilation,
                           c.ints("padding"), c.attr("padding_align", "UPPER"),
                           c.attr("ceil_mode", False))
    require(1 <= k <= 3, f"pooling over {k} axes")
    return axes, size, stride, dilation, front, back


MAX_POOL = {1: F.max_pool1d, 2: F.max_pool2d, 3: F.max_pool3d}
AVG_POOL = {1: F.avg_pool1d, 2: F.avg_pool2d, 3: F.avg_pool3d}
LP_POOL = {1: F.lp_pool1d, 2: F.lp_pool2d, 3: F.lp_pool3d}


def _symmetric(front: list[int], back: list[int], size: list[int]) -> bool:
    """Whether torch's own `padding` argument can hold the padding (equal, <= size / 2)."""
    return front == back and all(0 <= f <= s // 2 for f, s in zip(front, size))


@translation("nn.max_pool", "output")
def max_pool(c: Call) -> Any:
    """axes -> moved last, size -> kernel_size, stride, dilation, ceil_mode -> the same;
    padding -> torch `padding` when symmetric and <= size/2, else F.pad with -inf (padded
    cells never win, as SkriptND skips them): F.max_pool{1,2,3}d."""
    x = c["input"]
    axes, size, stride, dilation, front, back = _pool_geometry(c, x)
    ceil = c.attr("ceil_mode", False)
    pool = MAX_POOL[len(axes)]

    def run(t: Any) -> Any:
        if _symmetric(front, back, size):
            return pool(t, size, stride, front, dilation, ceil_mode=ceil)
        return pool(F.pad(t, _pairs(front, back), value=-math.inf), size, stride, 0, dilation,
                    ceil_mode=ceil)
    return _trailing(x, axes, run)


def _avg(c: Call, x: Any, include_padding: bool, divisor: int | None) -> Any:
    """F.avg_pool{1,2,3}d over the case's windows: count_include_pad = include_padding,
    divisor_override = divisor; dilation != 1 is not expressible (torch's avg_pool has none);
    asymmetric padding only when padded cells count (F.pad zeros)."""
    axes, size, stride, dilation, front, back = _pool_geometry(c, x)
    require(all(v == 1 for v in dilation), f"dilation {dilation} (torch avg_pool has none)")
    ceil = c.attr("ceil_mode", False)
    k = len(axes)

    def run(t: Any) -> Any:
        if k == 1 and divisor is not None:  # avg_pool1d has no divisor_override
            t = t.unsqueeze(-2)
            kernel, strides, pads = [1] + size, [1] + stride, [0] + front
            pool = F.avg_pool2d
        else:
            kernel, strides, pads, pool = size, stride, front, AVG_POOL[k]
        extra = {} if divisor is None else {"divisor_override": divisor}
        if _symmetric(front, back, size):
            y = pool(t, kernel, strides, pads, ceil, include_padding, **extra)
        else:
            require(include_padding, "asymmetric padding excluded from the count")
            y = pool(F.pad(t, _pairs(front, back)), kernel, strides, [0] * len(kernel), ceil,
                     True, **extra)
        return y.squeeze(-2) if k == 1 and divisor is not None else y
    return _trailing(x, axes, run)


@translation("nn.sum_pool", "output")
def sum_pool(c: Call) -> Any:
    """F.avg_pool with divisor_override=1 (torch has no sum pool); size -> kernel_size,
    stride, ceil_mode, padding as in avg_pool."""
    return _avg(c, c["input"], True, 1)


@translation("nn.avg_pool", "output")
def avg_pool(c: Call) -> Any:
    """ignore_border -> count_include_pad = not ignore_border; size -> kernel_size, stride,
    ceil_mode, padding (symmetric) -> the same: F.avg_pool{1,2,3}d."""
    return _avg(c, c["input"], not c.attr("ignore_border", True), None)


@translation("nn.rms_pool", "output")
def rms_pool(c: Call) -> Any:
    """torch.sqrt(avg_pool(x * x)) with avg_pool's mapping (torch has no rms pool)."""
    x = c["input"]
    return torch.sqrt(_avg(c, x * x, not c.attr("ignore_border", True), None))


@translation("nn.lp_pool", "output")
def lp_pool(c: Call) -> Any:
    """p -> norm_type, size -> kernel_size, stride, ceil_mode -> the same; padding -> F.pad
    zeros first (F.lp_pool has no padding; zeros add 0 to the sum of |x|^p for p > 0):
    F.lp_pool{1,2,3}d."""
    x = c["input"]
    axes, size, stride, dilation, front, back = _pool_geometry(c, x)
    require(all(v == 1 for v in dilation), f"dilation {dilation} (torch lp_pool has none)")
    pool = LP_POOL[len(axes)]
    ceil = c.attr("ceil_mode", False)
    return _trailing(x, axes, lambda t: pool(F.pad(t, _pairs(front, back)), c.attr("p"), size,
                                             stride, ceil))


# --------------------------------------------------------------------------- activations


@translation("nn.relu", "y")
def relu(c: Call) -> Any:
    """no attributes -> F.relu; alpha -> F.leaky_relu(negative_slope=alpha); max ->
    torch.clamp(x, 0, max) (alpha and max together: not mapped)."""
    x, alpha, top = c["x"], c.attr("alpha"), c.attr("max")
    require(alpha is None or top is None, "relu with both alpha and max")
    if alpha is not None:
        return F.leaky_relu(x, negative_slope=alpha)
    if top is not None:
        return torch.clamp(x, 0.0, top)
    return F.relu(x)


@translation("nn.prelu", "y")
def prelu(c: Call) -> Any:
    """axis -> moved to dim 1 (F.prelu's channel dim; rank 1 gets a unit batch): F.prelu."""
    x, alpha = c["x"], c["alpha"]
    axis = axis_of(c.attr("axis", 1), x.dim())
    if x.dim() == 1:
        return F.prelu(x.unsqueeze(0), alpha).squeeze(0)
    return F.prelu(x.movedim(axis, 1), alpha).movedim(1, axis)


@translation("nn.thresholded_relu", "y")
def thresholded_relu(c: Call) -> Any:
    """theta -> threshold, value 0: F.threshold (x > theta ? x : 0)."""
    return F.threshold(c["x"], c.attr("theta", 0.0), 0.0)


@translation("nn.gelu", "y")
def gelu(c: Call) -> Any:
    """approximate: none -> "none", TANH -> "tanh" (SIGMOID: torch has none): F.gelu."""
    mode = c.attr("approximate")
    require(mode in (None, "TANH"), f"gelu approximate={mode!r}")
    return F.gelu(c["x"], approximate="none" if mode is None else "tanh")


@translation("nn.sigmoid", "y")
def sigmoid(c: Call) -> Any:
    """No attributes: torch.sigmoid."""
    return torch.sigmoid(c["x"])


@translation("nn.hard_sigmoid", "y")
def hard_sigmoid(c: Call) -> Any:
    """F.hardsigmoid is fixed at alpha = 1/6, beta = 0.5: only those values are mapped."""
    alpha, beta = c.attr("alpha", 0.2), c.attr("beta", 0.5)
    require(alpha == 1.0 / 6.0 and beta == 0.5,
            f"hard_sigmoid alpha={alpha}, beta={beta} (F.hardsigmoid fixes 1/6, 0.5)")
    return F.hardsigmoid(c["x"])


@translation("nn.elu", "y")
def elu(c: Call) -> Any:
    """alpha -> alpha: F.elu."""
    return F.elu(c["x"], alpha=c.attr("alpha", 1.0))


@translation("nn.selu", "y")
def selu(c: Call) -> Any:
    """F.selu has fixed constants; the defaults alpha=1.67326319, lambda=1.05070102 (the
    Khronos 9-digit values of the same constants) map to it, other values do not."""
    alpha, scale = c.attr("alpha", 1.67326319), c.attr("lambda", 1.05070102)
    require(alpha == 1.67326319 and scale == 1.05070102,
            f"selu alpha={alpha}, lambda={scale} (F.selu fixes its constants)")
    return F.selu(c["x"])


@translation("nn.silu", "y")
def silu(c: Call) -> Any:
    """No attributes: F.silu."""
    return F.silu(c["x"])


@translation("nn.softplus", "y")
def softplus(c: Call) -> Any:
    """No attributes: F.softplus with its defaults beta=1, threshold=20."""
    return F.softplus(c["x"])


@translation("nn.erf", "y")
def erf(c: Call) -> Any:
    """No attributes: torch.erf."""
    return torch.erf(c["x"])


# --------------------------------------------------------------------------- normalisation


@translation("nn.batch_norm", "output")
def batch_norm(c: Call) -> Any:
    """channel_axis -> moved to dim 1 (rank 1: a unit batch), epsilon -> eps, scale ->
    weight, bias -> bias, training=False: F.batch_norm with running mean / var."""
    x = c["input"]
    axis = axis_of(c.attr("channel_axis", 1), x.dim())
    moved = x.unsqueeze(0) if x.dim() == 1 else x.movedim(axis, 1)
    eps = c.attr("epsilon", 1e-5)
    y = F.batch_norm(moved, c["mean"], c["variance"], c.get("scale"), c.get("bias"),
                     training=False, eps=eps)
    return y.squeeze(0) if x.dim() == 1 else y.movedim(1, axis)


@translation("nn.mean_variance_norm", "output")
def mean_variance_norm(c: Call) -> Any:
    """axes = every spatial axis [2, rank) -> F.instance_norm(weight=scale, bias=bias,
    eps=epsilon); other trailing axes without bias and scale -> F.layer_norm(normalized_shape
    = their extents, eps=epsilon); anything else is not mapped."""
    x, eps = c["input"], c.attr("epsilon", 1e-5)
    axes = sorted(axis_of(a, x.dim()) for a in (c.ints("axes") or list(range(2, x.dim()))))
    bias, scale = c.get("bias"), c.get("scale")
    if axes == list(range(2, x.dim())) and x.dim() >= 3:
        return F.instance_norm(x, weight=scale, bias=bias, eps=eps)
    require(bias is None and scale is None and axes == list(range(axes[0], x.dim())),
            f"mean_variance_norm over axes {c.ints('axes')} (neither F.instance_norm's "
            f"spatial axes nor F.layer_norm's trailing axes without bias/scale)")
    return F.layer_norm(x, [x.shape[a] for a in axes], eps=eps)


@translation("nn.local_response_norm", "output")
def local_response_norm(c: Call) -> Any:
    """axes=[1] (torch normalises across dim 1 only), size -> size, alpha, beta -> the same,
    bias -> k: F.local_response_norm (rank >= 3)."""
    x = c["input"]
    axes = [axis_of(a, x.dim()) for a in (c.ints("axes") or [1])]
    require(axes == [1] and x.dim() >= 3, f"local_response_norm over axes {c.ints('axes')}")
    return F.local_response_norm(x, c.ints("size")[0], alpha=c.attr("alpha", 1.0),
                                 beta=c.attr("beta", 0.5), k=c.attr("bias", 1.0))


def _normalize(p: float) -> Any:
    def run(c: Call) -> Any:
        """axes -> dim, epsilon -> eps (0 when absent: F.normalize's max(norm, eps) is then
        the norm itself); bias not mapped: F.normalize(p)."""
        require(c.attr("bias") is None, "a norm bias (F.normalize has none)")
        eps = c.attr("epsilon")
        return F.normalize(c["input"], p=p, dim=tuple(c.ints("axes")),
                           eps=0.0 if eps is None else eps)
    return run


translation("nn.l1_norm", "output")(_normalize(1.0))
translation("nn.l2_norm", "output")(_normalize(2.0))


@translation("nn.softmax", "output")
def softmax(c: Call) -> Any:
    """axes -> moved last and flattened into one dim (softmax over a set of axes is softmax
    over their flattening): F.softmax(dim=-1)."""
    x = c["input"]
    axes = c.ints("axes", [1])
    if len(axes) == 1:
        return F.softmax(x, dim=axes[0])
    d = x.dim()
    last = list(range(d - len(axes), d))
    moved = x.movedim(axes, last)
    flat = moved.reshape(list(moved.shape[:d - len(axes)]) + [-1])
    return F.softmax(flat, dim=-1).reshape(moved.shape).movedim(last, axes)


@translation("nn.lstm", "Y", "hN", "cN")
def lstm(c: Call) -> Any:
    """W -> weight_ih, R -> weight_hh, B -> bias_ih (bias_hh zeros), h0 / c0 (default zeros)
    -> hx; gate order i, f, g, o is torch's; steps equal for every batch item -> the first
    `steps` time steps; differing steps not mapped: torch.lstm (1 layer, unidirectional)."""
    x, w, r, b = c["X"], c["W"], c["R"], c["B"]
    batch, hidden = x.shape[1], r.shape[1]
    h0 = c.get("h0") if c.get("h0") is not None else torch.zeros(batch, hidden, dtype=x.dtype)
    c0 = c.get("c0") if c.get("c0") is not None else torch.zeros(batch, hidden, dtype=x.dtype)
    steps = c.get("steps")
    if steps is not None:
        counts = set(steps.tolist())
        require(len(counts) <= 1, f"different step counts {sorted(counts)} per batch item")
        x = x[:counts.pop()] if counts else x
    y, h, cell = torch.lstm(x, (h0.unsqueeze(0), c0.unsqueeze(0)),
                            [w, r, b, torch.zeros_like(b)], True, 1, 0.0, False, False, False)
    return y, h.squeeze(0), cell.squeeze(0)


# --------------------------------------------------------------------------- algo


@translation("algo.top_k", "values", "indices")
def top_k(c: Call) -> Any:
    """k -> k (at most the extent: SkriptND's k << m), axis -> dim, largest, sorted -> the
    same: torch.topk."""
    x = c["input"]
    axis = c.attr("axis", 0)
    extent = x.shape[axis]  # raises for an axis out of range
    values, indices = torch.topk(x, min(c.attr("k"), extent), dim=axis,
                                 largest=c.attr("largest", True), sorted=c.attr("sorted", True))
    return values, indices.to(INT)


@translation("algo.nonmax_suppress", "indices")
def nonmax_suppress(c: Call) -> Any:
    """Not in torch core (torchvision.ops.nms, not a dependency): unsupported."""
    raise unsupported("non-max suppression without torchvision")


# --------------------------------------------------------------------------- quant


@translation("quant.zero_point_linear_quantize", "output")
def zero_point_linear_quantize(c: Call) -> Any:
    """bits, signed, symmetric -> quant_min = signed ? (symmetric ? -r : -r - 1) : 0,
    quant_max = r (r = signed ? 2^(bits-1) - 1 : 2^bits - 1); scale, zero_point -> the
    same (one value: per tensor; a list: per channel along channel_axis -> axis):
    torch.fake_quantize_per_{tensor,channel}_affine."""
    x = c["input"]
    bits, signed = c.attr("bits"), c.attr("signed", True)
    r = 2 ** (bits - 1) - 1 if signed else 2 ** bits - 1
    low = (-r if c.attr("symmetric", False) else -r - 1) if signed else 0
    scale, zero = c.attr("scale"), c.attr("zero_point")
    if isinstance(scale, list) or isinstance(zero, list):
        axis = axis_of(c.attr("channel_axis", 1), x.dim())
        n = x.shape[axis]
        scales = torch.tensor(_per_axis(scale, n), dtype=torch.float32)
        # torch takes float32 per-channel scales: only exactly representable ones are mapped
        require(scales.double().tolist() == [float(v) for v in _per_axis(scale, n)],
                f"scales {scale} not exact in float32")
        zeros = torch.tensor(_per_axis(zero, n), dtype=torch.int32)
        return torch.fake_quantize_per_channel_affine(x, scales, zeros, axis, low, r)
    return torch.fake_quantize_per_tensor_affine(x, float(scale), int(zero), low, r)


@translation("quant.min_max_linear_quantize", "output")
def min_max_linear_quantize(c: Call) -> Any:
    """torch has no min/max fake quantisation (its affine form rounds x / scale + zero_point,
    not (x - min) / (max - min) * levels): unsupported."""
    raise unsupported("min/max linear quantisation (no torch operator rounds at these "
                      "positions)")
