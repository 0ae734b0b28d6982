"""ONNX translations of the `nn` and `quant` operators (for the onnxruntime back end).

Window geometry: SkriptND gives either explicit `padding` (all befores, then all afters: the
layout of ONNX `pads`) or none, and then an automatic total padding
`((ceil_mode ? x \\ s : x / s) - 1) * s + fd - x` split by `padding_align` ('UPPER': the
front gets `total / 2`, the extra cell behind; 'LOWER': `total \\ 2`). That is not ONNX's
SAME_UPPER/SAME_LOWER (whose output extent is always ceil(x / s)), so every translation
passes explicit `pads` computed by the stdlib's formula (`window` below). A negative automatic
padding (stride larger than the window) has no ONNX equivalent: unsupported.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from refinterp.backends.onnx_graph import (TRANSLATIONS, GraphBuilder, positive_axes,
                                            positive_axis, translation, unsupported)




def _list(value: object, count: int) -> list[int]:
    """An int-pack attribute (a single value repeated, as SkriptND's `= 1` defaults)."""
    if isinstance(value, (list, tuple)):
        return list(value) if len(value) == count else list(value) * count
    return [value] * count


def window(g: GraphBuilder, extents: list[int], sizes: list[int], ceil_mode: bool
           ) -> tuple[list[int], list[int], list[int], list[int]]:
    """(strides, dilations, befores, afters) of a conv/pool window per the stdlib formulas."""
    d = len(extents)
    stride = _list(g.attr("stride", 1), d)
    dilation = _list(g.attr("dilation", 1), d)
    if any(s <= 0 for s in stride) or any(v <= 0 for v in dilation) or \
            any(v <= 0 for v in sizes):
        return stride, dilation, [0] * d, [0] * d  # ONNX Runtime judges these (error cases)
    padding = g.attr("padding")
    if padding is not None:
        return stride, dilation, list(padding[:d]), list(padding[d:])
    befores, afters = [], []
    for x, k, s, v in zip(extents, sizes, stride, dilation):
        fd = (k - 1) * v + 1
        total = ((-(-x // s) if ceil_mode else x // s) - 1) * s + fd - x
        front = total // 2 if g.attr("padding_align", "UPPER") == "UPPER" else -(-total // 2)
        if total < 0:
            raise unsupported("a negative automatic padding (stride > window)")
        befores.append(front)
        afters.append(total - front)
    return stride, dilation, befores, afters


def _nc_spatial(g: GraphBuilder, name: str = "input") -> None:
    """Require the NCX data and filter formats (ONNX Conv/Pool layout)."""
    for key in ("data_format", "filter_format"):
        if g.attr(key, "NCX") != "NCX":
            raise unsupported(f"{key} '{g.attr(key)}' (ONNX uses NCX only)")
    if len(g.shape(name)) < 3:
        raise unsupported("fewer than one spatial axis")


# ----------------------------------------------------------------------------- linear


@translation("nn.linear")
def _linear(g: GraphBuilder) -> None:
    """linear(input, filter, bias) -> Gemm(input, filter, bias, transB = 1)."""
    inputs = [g.input("input"), g.input("filter")]
    if g.has("bias"):
        inputs.append(g.input("bias"))
    g.output("output", g.node("Gemm", inputs, transB=1))


@translation("nn.conv")
def _conv(g: GraphBuilder) -> None:
    """conv -> Conv: stride -> strides, dilation -> dilations, padding (or the automatic one,
    see `window`) -> pads, groups -> group (0 -> the input channels: depthwise); ceil_mode has
    no Conv attribute (unsupported); NCX data and filter formats only."""
    _nc_spatial(g)
    if g.attr("ceil_mode", False):
        raise unsupported("conv ceil_mode (ONNX Conv has none)")
    s, fs = g.shape("input"), g.shape("filter")
    stride, dilation, before, after = window(g, list(s[2:]), list(fs[2:]), False)
    groups = g.attr("groups", 1) or s[1]
    inputs = [g.input("input"), g.input("filter")]
    if g.has("bias"):
        inputs.append(g.input("bias"))
    g.output("output", g.node("Conv", inputs, strides=stride, dilations=dilation,
                              pads=before + after, group=groups,
                              kernel_shape=list(fs[2:])))


@translation("nn.deconv")
def _deconv(g: GraphBuilder) -> None:
    """deconv -> ConvTranspose (the filter [in, out / groups, k..] in both): strides,
    dilations, group as for conv; pads: `padding` or the automatic total `fd - s` split by
    padding_align; output_size -> output_padding = output_size - ((x - 1) s + fd - total),
    which ONNX bounds by the stride (else unsupported)."""
    _nc_spatial(g)
    s, fs = g.shape("input"), g.shape("filter")
    d = len(s) - 2
    stride = _list(g.attr("stride", 1), d)
    dilation = _list(g.attr("dilation", 1), d)
    padding = g.attr("padding")
    before, after, extra = [], [], []
    for k in range(d):
        fd = (fs[2 + k] - 1) * dilation[k] + 1
        if padding is not None:
            front, total = padding[k], padding[k] + padding[d + k]
        else:
            total = fd - stride[k]
            if total < 0:
                raise unsupported("a negative automatic padding (stride > window)")
            front = total // 2 if g.attr("padding_align", "UPPER") == "UPPER" \
                else -(-total // 2)
        natural = (s[2 + k] - 1) * stride[k] + fd - total
        size = g.attr("output_size")
        pad_out = (size[k] - natural) if size is not None else 0
        if pad_out < 0 or (pad_out and pad_out >= max(stride[k], dilation[k])):
            raise unsupported("an output_size ONNX output_padding cannot give")
        before.append(front)
        after.append(total - front)
        extra.append(pad_out)
    inputs = [g.input("input"), g.input("filter")]
    if g.has("bias"):
        inputs.append(g.input("bias"))
    groups = g.attr("groups", 1) or s[1]
    g.output("output", g.node("ConvTranspose", inputs, strides=stride, dilations=dilation,
                              pads=before + after, group=groups, output_padding=extra,
                              kernel_shape=list(fs[2:])))


# ----------------------------------------------------------------------------- pooling


def _pool_geometry(g: GraphBuilder) -> tuple[list[int], list[int], list[int], list[int],
                                               list[int]]:
    """(sizes, strides, dilations, befores, afters) of a pool over the spatial axes: ONNX
    pools every axis from 2 on, so `axes` must be those."""
    rank = len(g.shape("input"))
    axes = positive_axes(g.attr("axes", list(range(2, rank))), rank)
    if rank < 3 or axes != list(range(2, rank)):
        raise unsupported(f"pooling over axes {g.attr('axes')} (ONNX pools axes 2.. only)")
    sizes = list(g.attr("size"))
    stride, dilation, before, after = window(g, list(g.shape("input")[2:]), sizes,
                                             g.attr("ceil_mode", False))
    return sizes, stride, dilation, before, after


@translation("nn.max_pool")
def _max_pool(g: GraphBuilder) -> None:
    """max_pool -> MaxPool: size -> kernel_shape, stride -> strides, dilation -> dilations,
    padding -> pads (see `window`), ceil_mode -> ceil_mode; padded cells are skipped in both."""
    sizes, stride, dilation, before, after = _pool_geometry(g)
    g.output("output", g.node("MaxPool", [g.input("input")], kernel_shape=sizes,
                              strides=stride, dilations=dilation, pads=before + after,
                              ceil_mode=int(g.attr("ceil_mode", False))))


def _average(g: GraphBuilder, source: str) -> str:
    sizes, stride, dilation, before, after = _pool_geometry(g)
    return g.node("AveragePool", [source], kernel_shape=sizes, strides=stride,
                  dilations=dilation, pads=before + after,
                  ceil_mode=int(g.attr("ceil_mode", False)),
                  count_include_pad=0 if g.attr("ignore_border", True) else 1)


@translation("nn.avg_pool")
def _avg_pool(g: GraphBuilder) -> None:
    """avg_pool -> AveragePool: geometry as max_pool; ignore_border = true (divide by the
    non-padded cells) -> count_include_pad = 0, false (divide by the window volume) -> 1."""
    g.output("output", _average(g, g.input("input")))


@translation("nn.rms_pool")
def _rms_pool(g: GraphBuilder) -> None:
    """rms_pool = Sqrt(AveragePool(Mul(x, x))) with avg_pool's mapping."""
    x = g.input("input")
    g.output("output", g.node("Sqrt", [_average(g, g.node("Mul", [x, x]))]))


@translation("nn.sum_pool")
def _sum_pool(g: GraphBuilder) -> None:
    """sum_pool: ONNX has no sum pooling; a depthwise Conv (group = channels) with a filter of
    ones sums each window exactly as SkriptND (padded cells add 0). ceil_mode: the extra end
    padding that makes Conv produce the ceil-mode extent (the cells it adds are zeros)."""
    sizes, stride, dilation, before, after = _pool_geometry(g)
    s = g.shape("input")
    if s[1] == 0:
        raise unsupported("zero channels")
    if g.attr("ceil_mode", False):
        for k, x in enumerate(s[2:]):
            fd = (sizes[k] - 1) * dilation[k] + 1
            span = x + before[k] + after[k] - fd
            out = -(-span // stride[k]) + 1
            after[k] += (out - 1) * stride[k] + fd - (x + before[k] + after[k])
    ones = g.const(np.ones([s[1], 1] + sizes))
    g.output("output", g.node("Conv", [g.input("input"), ones], kernel_shape=sizes,
                              strides=stride, dilations=dilation, pads=before + after,
                              group=s[1]))


@translation("nn.lp_pool")
def _lp_pool(g: GraphBuilder) -> None:
    """lp_pool -> LpPool (p an int attribute in ONNX: a non-integer p is unsupported);
    geometry as max_pool."""
    p = g.attr("p")
    if p is None or p != int(p) or p <= 0:
        raise unsupported(f"lp_pool with p = {p} (ONNX's p is a positive int)")
    sizes, stride, dilation, before, after = _pool_geometry(g)
    g.output("output", g.node("LpPool", [g.input("input")], kernel_shape=sizes, p=int(p),
                              strides=stride, dilations=dilation, pads=before + after,
                              ceil_mode=int(g.attr("ceil_mode", False))))


# ----------------------------------------------------------------------------- activations


@translation("nn.relu")
def _relu(g: GraphBuilder) -> None:
    """relu{alpha, max} = max(min(x, max), alpha x): neither -> Relu; alpha only -> LeakyRelu
    (alpha) (equal for 0 <= alpha <= 1, which SkriptND asserts); with max -> Max(Min(x, max),
    Mul(alpha, x) or 0) (Clip would differ for max < 0)."""
    x = g.input("x")
    alpha, top = g.attr("alpha"), g.attr("max")
    if top is None:
        out = g.node("Relu", [x]) if alpha is None else g.node("LeakyRelu", [x], alpha=alpha)
    else:
        low = g.const(0.0) if alpha is None else g.node("Mul", [x, g.const(alpha)])
        out = g.node("Max", [g.node("Min", [x, g.const(top)]), low])
    g.output("y", out)


@translation("nn.prelu")
def _prelu(g: GraphBuilder) -> None:
    """prelu{axis}(x, alpha) -> PRelu(x, alpha reshaped to [c, 1 ..(rank - axis - 1)]) (ONNX
    broadcasts the slope from the back)."""
    rank = len(g.shape("x"))
    axis = positive_axis(g.attr("axis", 1), rank)
    slope = g.node("Reshape", [g.input("alpha"),
                               g.ints([g.shape("alpha")[0]] + [1] * (rank - axis - 1))])
    g.output("y", g.node("PRelu", [g.input("x"), slope]))


@translation("nn.thresholded_relu")
def _thresholded_relu(g: GraphBuilder) -> None:
    """thresholded_relu{theta} -> ThresholdedRelu(alpha = theta): x > theta ? x : 0 in both."""
    g.output("y", g.node("ThresholdedRelu", [g.input("x")], alpha=g.attr("theta", 0.0)))


@translation("nn.gelu")
def _gelu(g: GraphBuilder) -> None:
    """gelu{approximate} -> Gelu(approximate): absent -> 'none' (erf), 'TANH' -> 'tanh';
    'SIGMOID' (x sigmoid(1.702 x)) has no ONNX mode."""
    mode = {None: "none", "TANH": "tanh"}.get(g.attr("approximate"))
    if mode is None:
        raise unsupported(f"gelu approximate = '{g.attr('approximate')}'")
    g.output("y", g.node("Gelu", [g.input("x")], approximate=mode))


@translation("nn.sigmoid")
def _sigmoid(g: GraphBuilder) -> None:
    """sigmoid -> Sigmoid."""
    g.output("y", g.node("Sigmoid", [g.input("x")]))


@translation("nn.hard_sigmoid")
def _hard_sigmoid(g: GraphBuilder) -> None:
    """hard_sigmoid{alpha, beta} -> HardSigmoid(alpha, beta) (defaults 0.2, 0.5 in both)."""
    g.output("y", g.node("HardSigmoid", [g.input("x")], alpha=g.attr("alpha", 0.2),
                         beta=g.attr("beta", 0.5)))


@translation("nn.elu")
def _elu(g: GraphBuilder) -> None:
    """elu{alpha} -> Elu(alpha)."""
    g.output("y", g.node("Elu", [g.input("x")], alpha=g.attr("alpha", 1.0)))


@translation("nn.selu")
def _selu(g: GraphBuilder) -> None:
    """selu{alpha, lambda} -> Selu(alpha, gamma = lambda); SkriptND's defaults (Khronos'
    9-digit constants) are passed explicitly, ONNX's own defaults differ in the last digits."""
    g.output("y", g.node("Selu", [g.input("x")], alpha=g.attr("alpha", 1.67326319),
                         gamma=g.attr("lambda", 1.05070102)))


@translation("nn.silu")
def _silu(g: GraphBuilder) -> None:
    """silu = Mul(x, Sigmoid(x)) (SkriptND: x / (1 + exp(-x)))."""
    x = g.input("x")
    g.output("y", g.node("Mul", [x, g.node("Sigmoid", [x])]))


@translation("nn.softplus")
def _softplus(g: GraphBuilder) -> None:
    """softplus -> Softplus."""
    g.output("y", g.node("Softplus", [g.input("x")]))


@translation("nn.erf")
def _erf(g: GraphBuilder) -> None:
    """erf -> Erf."""
    g.output("y", g.node("Erf", [g.input("x")]))


# ----------------------------------------------------------------------------- normalisation


@translation("nn.batch_norm")
def _batch_norm(g: GraphBuilder) -> None:
    """batch_norm{epsilon, channel_axis}(input, mean, variance, bias, scale) ->
    BatchNormalization(X, scale (ones if absent), B = bias (zeros if absent), mean, var,
    epsilon) in inference mode; ONNX's channel axis is 1: another channel_axis is moved there
    with Transpose and back; a rank-1 input gets a leading unit axis."""
    rank = len(g.shape("input"))
    axis = positive_axis(g.attr("channel_axis", 1), rank)
    c = g.shape("mean")[0]
    x = g.input("input")
    if rank == 1:
        x, rank, axis = g.node("Unsqueeze", [x, g.ints([0])]), 2, axis + 1
    perm = None
    if axis != 1:
        perm = [0, axis] + [k for k in range(1, rank) if k != axis]
        x = g.node("Transpose", [x], perm=perm)
    scale = g.input("scale") if g.has("scale") else g.const(np.ones(c))
    bias = g.input("bias") if g.has("bias") else g.const(np.zeros(c))
    y = g.node("BatchNormalization", [x, scale, bias, g.input("mean"), g.input("variance")],
               epsilon=g.attr("epsilon", 1e-5))
    if perm is not None:
        y = g.node("Transpose", [y], perm=list(np.argsort(perm)))
    if len(g.shape("input")) == 1:
        y = g.node("Squeeze", [y, g.ints([0])])
    g.output("output", y)


@translation("nn.mean_variance_norm")
def _mean_variance_norm(g: GraphBuilder) -> None:
    """mean_variance_norm{axes, epsilon}(input, bias, scale): axes = the spatial axes (the
    default) -> InstanceNormalization(scale (ones), B = bias (zeros), epsilon); axes = 1.. (all
    but the batch) -> LayerNormalization(axis = 1, epsilon) then the per-channel scale and
    bias (Mul/Add); other axes have no ONNX operator."""
    rank = len(g.shape("input"))
    axes = sorted(positive_axes(g.attr("axes", list(range(2, rank))), rank))
    c = g.shape("input")[1]
    x = g.input("input")
    per_channel = [c] + [1] * (rank - 2)
    if axes == list(range(2, rank)) and rank >= 3:
        scale = g.input("scale") if g.has("scale") else g.const(np.ones(c))
        bias = g.input("bias") if g.has("bias") else g.const(np.zeros(c))
        y = g.node("InstanceNormalization", [x, scale, bias], epsilon=g.attr("epsilon", 1e-5))
    elif axes == list(range(1, rank)):
        shape = list(g.shape("input")[1:])
        y = g.node("LayerNormalization", [x, g.const(np.ones(shape)), g.const(np.zeros(shape))],
                   axis=1, epsilon=g.attr("epsilon", 1e-5))
        if g.has("scale"):
            y = g.node("Mul", [y, g.node("Reshape", [g.input("scale"), g.ints(per_channel)])])
        if g.has("bias"):
            y = g.node("Add", [y, g.node("Reshape", [g.input("bias"), g.ints(per_channel)])])
    else:
        raise unsupported(f"mean_variance_norm over axes {g.attr('axes')}")
    g.output("output", y)


@translation("nn.local_response_norm")
def _local_response_norm(g: GraphBuilder) -> None:
    """local_response_norm{axes = [1], size = [n], alpha, beta, bias} -> LRN(size = n, alpha,
    beta, bias): both divide by (bias + alpha / n * sum of squares over channels
    [c - (n-1)/2, c + (n-1)\\2])^beta; windows over other axes have no ONNX operator."""
    rank = len(g.shape("input"))
    axes = positive_axes(g.attr("axes", [1]), rank)
    size = g.attr("size")
    if axes != [1] or rank < 3:
        raise unsupported(f"local_response_norm over axes {g.attr('axes')} (LRN: channels)")
    g.output("output", g.node("LRN", [g.input("input")], size=size[0],
                              alpha=g.attr("alpha", 1.0), beta=g.attr("beta", 0.5),
                              bias=g.attr("bias", 1.0)))


def _lp_norm(p: int) -> Callable[[GraphBuilder], None]:
    def translate(g: GraphBuilder) -> None:
        """l1_norm / l2_norm over one axis without bias and epsilon -> LpNormalization(axis,
        p); bias, epsilon and several axes have no ONNX attribute."""
        axes = g.attr("axes", [])
        if len(axes) != 1 or g.attr("bias") is not None or g.attr("epsilon") is not None:
            raise unsupported("l1/l2_norm with several axes, bias or epsilon")
        g.output("output", g.node("LpNormalization", [g.input("input")], axis=axes[0], p=p))
    return translate


TRANSLATIONS["nn.l1_norm"] = _lp_norm(1)
TRANSLATIONS["nn.l2_norm"] = _lp_norm(2)


@translation("nn.softmax")
def _softmax(g: GraphBuilder) -> None:
    """softmax{axes = [a]} -> Softmax(axis = a); several axes have no ONNX attribute."""
    axes = g.attr("axes", [1])
    if len(axes) != 1:
        raise unsupported("softmax over several axes (ONNX Softmax takes one axis)")
    g.output("output", g.node("Softmax", [g.input("input")], axis=axes[0]))


# ----------------------------------------------------------------------------- quant

QUANT_TYPES = {(8, True): 3, (8, False): 2, (4, True): 22, (4, False): 21,
               (16, True): 5, (16, False): 4}  # TensorProto INT8, UINT8, INT4, UINT4, ...


@translation("quant.zero_point_linear_quantize")
def _zero_point_quantize(g: GraphBuilder) -> None:
    """zero_point_linear_quantize{zero_point, scale, bits, signed, symmetric, channel_axis} ->
    DequantizeLinear(QuantizeLinear(x, scale, zero_point), scale, zero_point): bits and signed
    -> the zero point's type (int8/uint8/int4/uint4/int16/uint16, other widths unsupported),
    whose range is ONNX's clamp; symmetric with signed (range [-r, r]) has no ONNX type
    (unsupported); a per-channel scale -> axis = channel_axis. QuantizeLinear rounds halves to
    even, SkriptND away from zero (see the differences)."""
    bits, signed = g.attr("bits"), g.attr("signed", True)
    elem = QUANT_TYPES.get((bits, signed))
    if elem is None:
        raise unsupported(f"{bits}-bit quantisation (ONNX has 4, 8 and 16 bits)")
    if signed and g.attr("symmetric", False):
        raise unsupported("signed symmetric quantisation (range [-r, r]: no ONNX type)")
    scale, zero = g.attr("scale"), g.attr("zero_point")
    scale = scale if isinstance(scale, list) else [scale]
    zero = zero if isinstance(zero, list) else [zero]
    if len(scale) == 1 and len(zero) == 1:
        s, z, axis = g.const(scale[0]), _zero(g, zero[0], elem, []), None
    else:
        n = max(len(scale), len(zero))
        s = g.const(np.resize(scale, n))
        z = _zero(g, list(np.resize(zero, n)), elem, [n])
        axis = g.attr("channel_axis", 1)
    q = g.node("QuantizeLinear", [g.input("input"), s, z], axis=axis)
    g.output("output", g.node("DequantizeLinear", [q, s, z], axis=axis))


def _zero(g: GraphBuilder, value: object, elem: int, dims: list[int]) -> str:
    """A zero-point initializer of ONNX element type `elem`."""
    from onnx import helper
    name = g.fresh("zp")
    values = value if isinstance(value, list) else [value]
    g.initializers.append(helper.make_tensor(name, elem, dims, [int(v) for v in values]))
    return name


# ----------------------------------------------------------------------------- recurrent


@translation("nn.lstm")
def _lstm(g: GraphBuilder) -> None:
    """lstm(X, W, R, B, h0, c0, steps) -> LSTM (forward, default activations sigmoid / tanh /
    tanh, no peepholes: the cell of `_lstm_step`). Gates: SkriptND's rows i, f, g, o -> ONNX's
    i, o, f, c (Split + Concat of W, R, B); W, R get the direction axis (Unsqueeze); B -> [Wb,
    Rb] with Rb = 0; h0, c0 -> initial_h, initial_c (absent: zeros in both); steps ->
    sequence_lens (int32). SkriptND's Y has the run-time extent of the step count; ONNX pads
    Y to the sequence length with zeros, so Y is sliced to the largest count (the counts must
    be equal under profile spec)."""
    def reorder(name: str, axis: int) -> str:
        i, f, c, o = g.node("Split", [g.input(name)], outputs=4, axis=axis, num_outputs=4)
        return g.node("Concat", [i, o, f, c], axis=axis)

    n = g.shape("R")[1]
    if g.shape("W")[0] != 4 * n:
        raise unsupported("W rows not 4 n (ONNX splits them by the hidden size)")
    w = g.node("Unsqueeze", [reorder("W", 0), g.ints([0])])
    r = g.node("Unsqueeze", [reorder("R", 0), g.ints([0])])
    b = g.node("Unsqueeze", [g.node("Concat", [reorder("B", 0), g.const(np.zeros(4 * n))],
                                    axis=0), g.ints([0])])
    inputs = [g.input("X"), w, r, b]
    inputs.append(g.node("Cast", [g.input("steps")], to=6) if g.has("steps") else "")
    for name in ("h0", "c0"):
        inputs.append(g.node("Unsqueeze", [g.input(name), g.ints([0])]) if g.has(name) else "")
    y, h, c = g.node("LSTM", inputs, outputs=3, hidden_size=n)
    y = g.node("Squeeze", [y, g.ints([1])])
    if g.has("steps"):
        steps = np.asarray(g.arrays["steps"])
        y = g.node("Slice", [y, g.ints([0]), g.ints([int(steps.max()) if steps.size else 0]),
                             g.ints([0])])
    g.output("Y", y)
    g.output("hN", g.node("Squeeze", [h, g.ints([0])]))
    g.output("cN", g.node("Squeeze", [c, g.ints([0])]))
