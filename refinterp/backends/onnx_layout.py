"""ONNX translations of the `layout` and `misc` operators (for the onnxruntime back end).

Shapes are static in a golden case, so shape arguments (Reshape targets, Expand shapes, Tile
repeats, Slice/Pad positions) are int64 initializers computed from the attributes and the
input shapes as the stdlib's `@using` blocks define them; each translation says how.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from refinterp.backends.onnx_graph import (TRANSLATIONS, GraphBuilder, positive_axes,
                                            positive_axis, translation, unsupported)


# SkriptND generic type -> (NumPy dtype kind for GraphBuilder.const, ONNX TensorProto type)
KINDS = {"real": "real", "int": "int", "bool": "bool"}



def _generic(g: GraphBuilder) -> str:
    if not g.generics or g.generics[0] not in KINDS:
        raise unsupported(f"generic type {g.generics}")
    return KINDS[g.generics[0]]


# ----------------------------------------------------------------------------- constants


@translation("layout.constant", "layout.tensor")
def _constant(g: GraphBuilder) -> None:
    """constant / tensor -> an initializer of `value` (C order) reshaped to `shape` (a
    single value fills the shape, as `u = value := ..`), through Identity."""
    kind = _generic(g)
    shape = list(g.attr("shape", []))
    value = np.asarray(g.attr("value"), dtype=object)
    volume = int(np.prod(shape)) if shape else 1
    if value.size == 1 and volume != 1:
        value = np.full(volume, value.reshape(-1)[0], dtype=object)
    if value.size != volume:
        raise unsupported("a value count that does not match the shape")
    dtype = {"real": np.float64, "int": np.int64, "bool": bool}[kind]
    array = np.asarray(value.tolist() if value.size else [], dtype=dtype).reshape(shape)
    g.output("output", g.node("Identity", [g.const(array, kind)]))


@translation("layout.uniform")
def _uniform(g: GraphBuilder) -> None:
    """uniform{shape}(value) -> Expand(value, shape)."""
    shape = g.attr("shape")
    if any(s < 0 for s in shape):
        raise unsupported("negative extents in 'shape'")
    g.output("output", g.node("Expand", [g.input("value"), g.ints(shape)]))


@translation("layout.range")
def _range(g: GraphBuilder) -> None:
    """range{first, last, stride} -> Range(start=first, limit=last, delta=stride): both give
    max(ceil((last - first) / stride), 0) elements first + i * stride."""
    kind = _generic(g)
    if kind not in ("real", "int"):
        raise unsupported(f"range of {kind}")
    first, last = g.attr("first"), g.attr("last")
    stride = g.attr("stride", 1)
    g.output("output", g.node("Range", [g.const(first, kind), g.const(last, kind),
                                        g.const(stride, kind)]))


@translation("layout.shape")
def _shape(g: GraphBuilder) -> None:
    """shape -> Shape (int64)."""
    g.output("output", g.node("Shape", [g.input("input")]))


@translation("layout.cast")
def _cast(g: GraphBuilder) -> None:
    """cast<R> -> Cast(to = R): real -> int truncates toward zero in both; real -> bool is
    x != 0 in ONNX (NaN gives true)."""
    kind = _generic(g)
    to = {"real": 11 if g.real == np.float64 else 1, "int": 7, "bool": 9}[kind]
    g.output("y", g.node("Cast", [g.input("x")], to=to))


# ----------------------------------------------------------------------------- reshaping


def _axis(g: GraphBuilder, name: str = "input", key: str = "axis", default: int = 0) -> int:
    return positive_axis(g.attr(key, default), len(g.shape(name)))


def _reshape(g: GraphBuilder, source: str, shape: list[int]) -> str:
    """Reshape with allowzero = 1 (a 0 in the target is an extent 0, not 'copy')."""
    return g.node("Reshape", [source, g.ints(shape)], allowzero=1)


@translation("layout.reshape")
def _reshape_op(g: GraphBuilder) -> None:
    """reshape{axis, rank, shape} -> Reshape to s[:axis] + shape + s[axis + rank:]; a -1 in
    `shape` stays -1 (inferred by ONNX as by SkriptND), allowzero = 1."""
    s = list(g.shape("input"))
    axis = _axis(g)
    rank = g.attr("rank", len(s) - axis)
    shape = list(g.attr("shape"))
    if -1 in shape and 0 in s:
        raise unsupported("an inferred extent (-1) of an empty tensor")
    g.output("output", _reshape(g, g.input("input"), s[:axis] + shape + s[axis + rank:]))


@translation("layout.flatten")
def _flatten(g: GraphBuilder) -> None:
    """flatten{axis, rank} -> Reshape to s[:axis] + [prod(s[axis:axis+rank])] + the rest
    (ONNX Flatten makes 2-D only)."""
    s = list(g.shape("input"))
    axis = _axis(g)
    rank = g.attr("rank", len(s) - axis)
    volume = int(np.prod(s[axis:axis + rank])) if rank else 1
    g.output("output", _reshape(g, g.input("input"), s[:axis] + [volume] + s[axis + rank:]))


@translation("layout.unflatten")
def _unflatten(g: GraphBuilder) -> None:
    """unflatten{axis, shape} -> Reshape to s[:axis] + shape + s[axis + 1:]."""
    s = list(g.shape("input"))
    axis = _axis(g)
    g.output("output", _reshape(g, g.input("input"),
                                s[:axis] + list(g.attr("shape")) + s[axis + 1:]))


@translation("layout.squeeze")
def _squeeze(g: GraphBuilder) -> None:
    """squeeze{axes} -> Squeeze(axes); empty `axes` -> Identity (ONNX Squeeze without axes
    removes every unit axis)."""
    axes = list(g.attr("axes"))
    x = g.input("input")
    g.output("output", g.node("Squeeze", [x, g.ints(axes)]) if axes else
             g.node("Identity", [x]))


@translation("layout.unsqueeze")
def _unsqueeze(g: GraphBuilder) -> None:
    """unsqueeze{axes} -> Unsqueeze(axes) (negative axes count in the output rank in both)."""
    g.output("output", g.node("Unsqueeze", [g.input("input"), g.ints(g.attr("axes"))]))


@translation("layout.concat")
def _concat(g: GraphBuilder) -> None:
    """concat{axis} -> Concat(axis)."""
    g.output("output", g.node("Concat", g.input("inputs"), axis=g.attr("axis")))


@translation("layout.split")
def _split(g: GraphBuilder) -> None:
    """split{axis, count, sizes} -> Split(axis, split = sizes or count equal parts)."""
    s = g.shape("input")
    axis = _axis(g)
    sizes = g.attr("sizes")
    if sizes is None:
        count = g.attr("count")
        if count is None or count <= 0 or s[axis] % count:
            raise unsupported("a count that does not divide the extent")
        sizes = [s[axis] // count] * count
    outs = g.node("Split", [g.input("input"), g.ints(sizes)], outputs=len(sizes),
                  axis=g.attr("axis"))
    for k, out in enumerate(outs if len(sizes) > 1 else [outs]):
        g.output(f"outputs.{k}", out)


@translation("layout.stack")
def _stack(g: GraphBuilder) -> None:
    """stack{axis, squeeze} -> Concat(axis) of the items, each Unsqueeze(axis)-ed first unless
    `squeeze` (then the items already have the unit axis). A negative SkriptND axis counts in
    the items' rank (`axis + rank`), ONNX Unsqueeze's in the output rank: it is made
    non-negative first."""
    rank = len(g.shape("inputs"))
    axis = g.attr("axis")
    if not g.attr("squeeze", False):
        axis = axis + rank if axis < 0 else axis
        items = [g.node("Unsqueeze", [x, g.ints([axis])]) for x in g.input("inputs")]
    else:
        items = g.input("inputs")
    g.output("output", g.node("Concat", items, axis=axis))


@translation("layout.unstack")
def _unstack(g: GraphBuilder) -> None:
    """unstack{axis, squeeze} -> Split(axis) into unit parts, each Squeeze(axis)-ed when
    `squeeze` (the default)."""
    axis = g.attr("axis")
    n = g.shape("input")[_axis(g)]
    parts = g.node("Split", [g.input("input"), g.ints([1] * n)], outputs=n, axis=axis)
    parts = parts if n > 1 else [parts]
    for k, part in enumerate(parts):
        if g.attr("squeeze", True):
            part = g.node("Squeeze", [part, g.ints([axis])])
        g.output(f"outputs.{k}", part)


@translation("layout.tile")
def _tile(g: GraphBuilder) -> None:
    """tile{axes, repeats} -> Tile(repeats over every axis: `repeats` at `axes`, 1 elsewhere)."""
    rank = len(g.shape("input"))
    full = [1] * rank
    for axis, r in zip(positive_axes(g.attr("axes", list(range(rank))), rank),
                       g.attr("repeats")):
        full[axis] = r
    g.output("output", g.node("Tile", [g.input("input"), g.ints(full)]))


@translation("layout.broadcast")
def _broadcast(g: GraphBuilder) -> None:
    """broadcast{axes, shape} -> Expand(the input shape with `shape` at `axes`); ONNX Expand
    broadcasts bidirectionally, so extents SkriptND rejects are not caught."""
    s = list(g.shape("input"))
    for axis, extent in zip(positive_axes(g.attr("axes", list(range(len(s)))), len(s)),
                            g.attr("shape")):
        s[axis] = extent
    g.output("output", g.node("Expand", [g.input("input"), g.ints(s)]))


@translation("layout.slice")
def _slice(g: GraphBuilder) -> None:
    """slice{axes, begin, end, stride} -> Slice(starts = begin, ends = end, axes, steps =
    stride): both add the extent to negative positions and clamp (SkriptND to [-1, s], ONNX
    to [0, s] / [-1, s - 1] by the sign of the step: the same elements)."""
    rank = len(g.shape("input"))
    axes = g.attr("axes", list(range(rank)))
    stride = g.attr("stride", [1] * len(axes))
    if isinstance(stride, int):
        stride = [stride] * len(axes)
    g.output("output", g.node("Slice", [g.input("input"), g.ints(g.attr("begin")),
                                        g.ints(g.attr("end")), g.ints(axes), g.ints(stride)]))


@translation("layout.pad")
def _pad(g: GraphBuilder) -> None:
    """pad{axes, padding, method}(input, value) -> Pad(pads = padding (befores then afters, the
    same layout), axes, constant_value = value): CONSTANT -> constant, REFLECT -> reflect,
    REPLICATE -> edge; SYMMETRIC has no ONNX mode (ONNX 'wrap' is periodic)."""
    mode = {"CONSTANT": "constant", "REFLECT": "reflect",
            "REPLICATE": "edge"}.get(g.attr("method", "CONSTANT"))
    if mode is None:
        raise unsupported(f"pad method '{g.attr('method')}'")
    rank = len(g.shape("input"))
    inputs = [g.input("input"), g.ints(g.attr("padding"))]
    inputs.append(g.input("value") if g.has("value") else "")
    inputs.append(g.ints(g.attr("axes", list(range(rank)))))
    g.output("output", g.node("Pad", inputs, mode=mode))


@translation("layout.transpose")
def _transpose(g: GraphBuilder) -> None:
    """transpose{axis, perm} -> Transpose(perm = [0 .. axis) + perm): `perm` holds absolute
    axes from `axis` on (negative ones count from the end: made non-negative); without `perm`
    the axes from `axis` on are reversed (only axis 0 is translated then: the stdlib's
    default `[d - 1:-1:-1]` is relative to `axis`)."""
    rank = len(g.shape("input"))
    axis = _axis(g)
    perm = g.attr("perm")
    if perm is None:
        if axis != 0:
            raise unsupported("a default perm with axis != 0")
        perm = list(range(rank - 1, -1, -1))
    perm = [p + rank if p < 0 else p for p in perm]
    g.output("output", g.node("Transpose", [g.input("input")],
                              perm=list(range(axis)) + perm))


def _depth_space(op: str) -> Callable[[GraphBuilder], None]:
    def translate(g: GraphBuilder) -> None:
        """space_to_depth / depth_to_space -> SpaceToDepth / DepthToSpace: rank-4 input with
        equal block sizes only (ONNX's blocksize is one int); data_format NCX as is, NXC
        through Transpose to NCHW and back; blocks_first -> DepthToSpace mode DCR (true) /
        CRD (false); SpaceToDepth has DCR only (blocks_first = true)."""
        block = g.attr("block_size")
        fmt = g.attr("data_format", "NCX")
        if fmt not in ("NCX", "NXC") or len(g.shape("input")) != 4 or len(set(block)) != 1:
            raise unsupported("not a 2-D NCX/NXC case with one block size (data_format, "
                              "rank, block_size)")
        first = g.attr("blocks_first", True)
        if op == "SpaceToDepth" and not first:
            raise unsupported("blocks_first = false (SpaceToDepth is DCR only)")
        x = g.input("input")
        if fmt == "NXC":
            x = g.node("Transpose", [x], perm=[0, 3, 1, 2])
        mode = None if op == "SpaceToDepth" else ("DCR" if first else "CRD")
        out = g.node(op, [x], blocksize=block[0], mode=mode)
        if fmt == "NXC":
            out = g.node("Transpose", [out], perm=[0, 2, 3, 1])
        g.output("output", out)
    return translate


TRANSLATIONS["layout.space_to_depth"] = _depth_space("SpaceToDepth")
TRANSLATIONS["layout.depth_to_space"] = _depth_space("DepthToSpace")


@translation("layout.nonzero")
def _nonzero(g: GraphBuilder) -> None:
    """nonzero -> NonZero (int64 [rank, count], row-major order in both)."""
    g.output("index", g.node("NonZero", [g.input("input")]))


@translation("layout.gather")
def _gather(g: GraphBuilder) -> None:
    """gather{axis}(data, index) -> Gather(axis)."""
    g.output("output", g.node("Gather", [g.input("data"), g.input("index")],
                              axis=g.attr("axis")))


@translation("layout.gather_nd")
def _gather_nd(g: GraphBuilder) -> None:
    """gather_nd{batch_dims} -> GatherND(batch_dims)."""
    g.output("output", g.node("GatherND", [g.input("data"), g.input("indices")],
                              batch_dims=g.attr("batch_dims", 0)))


@translation("layout.scatter")
def _scatter(g: GraphBuilder) -> None:
    """scatter{axis} -> ScatterElements(axis, reduction = none). With duplicate indices ONNX
    leaves the result undefined; ONNX Runtime applies the updates in order (the last wins)."""
    g.output("output", g.node("ScatterElements", [g.input("data"), g.input("indices"),
                                                  g.input("updates")], axis=g.attr("axis")))


@translation("layout.scatter_nd")
def _scatter_nd(g: GraphBuilder) -> None:
    """scatter_nd -> ScatterND (reduction none); batch_dims > 0 has no ONNX attribute."""
    if g.attr("batch_dims", 0) != 0:
        raise unsupported("scatter_nd with batch_dims != 0 (ONNX ScatterND has none)")
    g.output("output", g.node("ScatterND", [g.input("data"), g.input("indices"),
                                            g.input("updates")]))
