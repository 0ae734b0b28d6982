"""Torch translations of the `layout` stdlib operators.

Each translation's docstring gives its mapping: SkriptND attribute -> torch argument.
Negative axes are passed to torch as given wherever torch accepts them.
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F

from refinterp.backends.torch_common import (DTYPES, INT, REAL, Call, axis_of, require,
                                             translation, unsupported)


def _generic(c: Call) -> torch.dtype:
    """The dtype of the first generic argument (`constant<real>`)."""
    require(bool(c.generics) and c.generics[0] in DTYPES, f"generics {c.generics}")
    return DTYPES[c.generics[0]]


def _values(value: Any, shape: list[int], dtype: torch.dtype) -> Any:
    """`value` (one value for every element, or the flat row-major list) as a tensor."""
    values = value if isinstance(value, list) else [value]
    flat = torch.tensor(values, dtype=dtype)
    if flat.numel() == 1:
        return flat.reshape([]).expand(shape).clone()
    return flat.reshape(shape)


@translation("layout.constant", "output")
def constant(c: Call) -> Any:
    """shape, value -> torch.tensor(value, dtype=<generic>).reshape(shape) (one value:
    expand)."""
    return _values(c.attr("value"), c.ints("shape"), _generic(c))


@translation("layout.tensor", "output")
def tensor(c: Call) -> Any:
    """As constant; shape defaults to [] (rank 0)."""
    return _values(c.attr("value"), c.ints("shape", []), _generic(c))


@translation("layout.uniform", "output")
def uniform(c: Call) -> Any:
    """shape -> value.expand(shape).clone()."""
    return c["value"].expand(c.ints("shape")).clone()


@translation("layout.range", "output")
def range_(c: Call) -> Any:
    """first -> start, last -> end (exclusive), stride -> step: torch.arange, dtype the
    generic."""
    return torch.arange(c.attr("first"), c.attr("last"), c.attr("stride", 1),
                        dtype=_generic(c))


@translation("layout.shape", "output")
def shape(c: Call) -> Any:
    """No attributes: torch.tensor(input.shape, dtype=int64)."""
    return torch.tensor(list(c["input"].shape), dtype=INT)


@translation("layout.cast", "y")
def cast(c: Call) -> Any:
    """The generic R -> Tensor.to(dtype) (float->int truncates toward zero in torch)."""
    return c["x"].to(_generic(c))


@translation("layout.reshape", "output")
def reshape(c: Call) -> Any:
    """axis, rank, shape -> torch.reshape(input, s[:axis] + shape + s[axis+rank:]); a -1 in
    shape is torch's inferred extent."""
    x = c["input"]
    axis = axis_of(c.attr("axis", 0), x.dim())
    rank = c.attr("rank", x.dim() - axis)
    return torch.reshape(x, list(x.shape[:axis]) + c.ints("shape") +
                         list(x.shape[axis + rank:]))


@translation("layout.flatten", "output")
def flatten(c: Call) -> Any:
    """axis -> start_dim, rank -> end_dim = axis + rank - 1: torch.flatten; rank 0 (a unit
    axis inserted) -> torch.unsqueeze(axis)."""
    x = c["input"]
    axis = axis_of(c.attr("axis", 0), x.dim())
    rank = c.attr("rank", x.dim() - axis)
    if rank == 0:
        return torch.unsqueeze(x, axis)
    return torch.flatten(x, start_dim=axis, end_dim=axis + rank - 1)


@translation("layout.unflatten", "output")
def unflatten(c: Call) -> Any:
    """axis -> dim, shape -> sizes: torch.unflatten."""
    return torch.unflatten(c["input"], c.attr("axis"), c.ints("shape"))


@translation("layout.squeeze", "output")
def squeeze(c: Call) -> Any:
    """axes -> dim (a tuple): torch.squeeze (torch leaves an axis of extent != 1 alone)."""
    return torch.squeeze(c["input"], tuple(c.ints("axes")))


@translation("layout.unsqueeze", "output")
def unsqueeze(c: Call) -> Any:
    """axes (positions in the output, rank d + k) -> one torch.unsqueeze per axis in
    increasing order."""
    x = c["input"]
    rank = x.dim() + len(c.ints("axes"))
    axes = sorted(axis_of(a, rank) for a in c.ints("axes"))
    if len(set(axes)) != len(axes):
        # the chain of single-axis torch.unsqueeze calls would insert a repeated axis twice
        raise unsupported(f"repeated axes {c.ints('axes')} in one torch.unsqueeze chain")
    for axis in axes:
        x = torch.unsqueeze(x, axis)
    return x


@translation("layout.concat", "output")
def concat(c: Call) -> Any:
    """axis -> dim: torch.cat."""
    return torch.cat(c["inputs"], dim=c.attr("axis"))


@translation("layout.split", "outputs")
def split(c: Call) -> Any:
    """axis -> dim; sizes -> split_size_or_sections (a list): torch.split; count alone ->
    chunks: torch.chunk."""
    x, axis = c["input"], c.attr("axis")
    sizes = c.ints("sizes")
    if sizes is None:  # count alone -> torch.chunk(count)
        return list(torch.chunk(x, c.attr("count"), dim=axis))
    return list(torch.split(x, sizes, dim=axis))


@translation("layout.stack", "output")
def stack(c: Call) -> Any:
    """axis -> dim: torch.stack; a negative axis counts from the end of the *input* rank in
    SkriptND (axis + rank) but of the output rank in torch.stack, so it is normalised first;
    squeeze=true (the inputs have a unit axis there) -> torch.cat along it."""
    inputs = c["inputs"]
    axis = c.attr("axis")
    if c.attr("squeeze", False):
        return torch.cat(inputs, dim=axis)
    rank = inputs[0].dim()
    return torch.stack(inputs, dim=axis + rank if -rank <= axis < 0 else axis)


@translation("layout.unstack", "outputs")
def unstack(c: Call) -> Any:
    """axis -> dim: torch.unbind; squeeze=false -> torch.split(1, dim) (unit axis kept)."""
    if c.attr("squeeze", True):
        return list(torch.unbind(c["input"], dim=c.attr("axis")))
    return list(torch.split(c["input"], 1, dim=c.attr("axis")))


def _full(c: Call, name: str, rank: int, fill: int) -> list[int]:
    """The per-axis pack attribute `name` over `axes` as a list of `rank` values."""
    out = [fill] * rank
    axes = c.ints("axes") or list(range(rank))
    normal = [axis_of(a, rank) for a in axes]
    require(len(set(normal)) == len(normal), f"repeated axes {axes} in one torch dims list")
    for axis, value in zip(normal, c.ints(name)):
        out[axis] = value
    return out


@translation("layout.tile", "output")
def tile(c: Call) -> Any:
    """axes, repeats -> dims (one repeat per axis, 1 elsewhere): torch.tile."""
    x = c["input"]
    return torch.tile(x, _full(c, "repeats", x.dim(), 1))


@translation("layout.broadcast", "output")
def broadcast(c: Call) -> Any:
    """axes, shape -> the full target shape (input extents elsewhere): torch.broadcast_to."""
    x = c["input"]
    target = list(x.shape)
    axes = c.ints("axes") or list(range(x.dim()))
    for axis, extent in zip(axes, c.ints("shape")):
        target[axis_of(axis, x.dim())] = extent
    return torch.broadcast_to(x, target).clone()


@translation("layout.slice", "output")
def slice_(c: Call) -> Any:
    """axes, begin, end, stride -> per axis torch.index_select with
    torch.arange(begin, end, stride) after SkriptND's normalisation (negative positions + s,
    clamped to [-1, s]); torch tensors have no negative-step slicing."""
    x = c["input"]
    axes = c.ints("axes") or list(range(x.dim()))
    strides = c.ints("stride", [1] * len(axes))
    if len(strides) == 1 and len(axes) > 1:
        strides = strides * len(axes)
    for axis, begin, end, step in zip(axes, c.ints("begin"), c.ints("end"), strides):
        axis = axis_of(axis, x.dim())
        s = x.shape[axis]
        begin = min(max(begin + s if begin < 0 else begin, -1), s)
        end = min(max(end + s if end < 0 else end, -1), s)
        index = torch.arange(begin, end, step, dtype=INT)  # raises for step 0
        x = torch.index_select(x, axis, index)  # raises for an index outside [0, s)
    return x


PAD_MODES = {"CONSTANT": "constant", "REFLECT": "reflect", "REPLICATE": "replicate"}


@translation("layout.pad", "output")
def pad(c: Call) -> Any:
    """padding [before.., after..] over axes -> F.pad's (before, after) pairs from the last
    axis; method CONSTANT/REFLECT/REPLICATE -> mode constant/reflect/replicate; value ->
    value (constant only)."""
    x = c["input"]
    method = c.attr("method", "CONSTANT")
    require(method in PAD_MODES, f"pad method {method!r}")
    axes = [axis_of(a, x.dim()) for a in (c.ints("axes") or list(range(x.dim())))]
    padding = c.ints("padding")
    k = len(axes)
    before, after = [0] * x.dim(), [0] * x.dim()
    for axis, b, a in zip(axes, padding[:k], padding[k:]):
        before[axis], after[axis] = b, a
    first = min([a for a in range(x.dim()) if before[a] or after[a]], default=x.dim())
    pairs = []
    for axis in reversed(range(first, x.dim())):
        pairs += [before[axis], after[axis]]
    if method == "CONSTANT":
        value = c.get("value")
        if value is not None and value.dtype != x.dtype:
            raise TypeError("value and input types differ")
        return F.pad(x, pairs, mode="constant",
                     value=0.0 if value is None else value.item())
    # torch's reflect/replicate pad the last 1-3 axes of an [N, C, ...] tensor: the axes
    # before the first padded one become N (bools go through float64 and back, exactly)
    trailing = list(x.shape[first:])
    require(len(trailing) <= 3, f"{method} padding of {len(trailing)} trailing axes")
    t = x.reshape([-1, 1] + trailing)
    out = F.pad(t.to(REAL) if x.dtype == torch.bool else t, pairs, mode=PAD_MODES[method])
    return out.reshape(list(x.shape[:first]) + list(out.shape[2:])).to(x.dtype)


@translation("layout.transpose", "output")
def transpose(c: Call) -> Any:
    """axis, perm (absolute axes from `axis` on; negative ones + rank) -> Tensor.permute of
    range(axis) + perm (default: the reversed axes from `axis`)."""
    x = c["input"]
    axis = axis_of(c.attr("axis", 0), x.dim())
    perm = c.ints("perm")
    if perm is None:
        perm = list(range(x.dim() - 1, axis - 1, -1))
    perm = [axis_of(p, x.dim()) for p in perm]
    return x.permute(list(range(axis)) + perm)


def _no_zero(values: list[int]) -> None:
    """The reshape arithmetic below divides by these: 0 has no torch reshape to map to."""
    require(all(v != 0 for v in values), f"{values} (a zero divisor of the reshape extents)")


@translation("layout.space_to_batch", "output")
def space_to_batch(c: Call) -> Any:
    """block_size -> each spatial axis split as [block, s / block] (block major, the spec's
    order), the block axes moved in front of the batch: torch.reshape / permute."""
    x = c["input"]
    blocks = c.ints("block_size")
    b, ch, spatial = x.shape[0], x.shape[1], list(x.shape[2:])
    _no_zero(blocks)
    split = [b, ch]
    for k, s in zip(blocks, spatial):
        split += [k, s // k]  # torch.reshape rejects an extent k does not divide
    y = x.reshape(split)
    d = len(blocks)
    perm = [2 + 2 * i for i in range(d)] + [0, 1] + [3 + 2 * i for i in range(d)]
    volume = 1
    for k in blocks:
        volume *= k
    return y.permute(perm).reshape([volume * b, ch] + [s // k for k, s in zip(blocks, spatial)])


@translation("layout.batch_to_space", "output")
def batch_to_space(c: Call) -> Any:
    """The inverse of space_to_batch: torch.reshape / permute."""
    x = c["input"]
    blocks = c.ints("block_size")
    d = len(blocks)
    volume = 1
    for k in blocks:
        volume *= k
    _no_zero(blocks)
    b, ch, spatial = x.shape[0] // volume, x.shape[1], list(x.shape[2:])
    y = x.reshape(blocks + [b, ch] + spatial)
    perm = [d, d + 1]
    for i in range(d):
        perm += [i, d + 2 + i]
    return y.permute(perm).reshape([b, ch] + [s * k for k, s in zip(blocks, spatial)])


def _depth_layout(c: Call) -> tuple[Any, bool, bool, list[int], int]:
    """What space_to_depth and depth_to_space share: the input channels-first (data_format
    NXC -> NCX), whether it was NXC, blocks_first, the block sizes (none zero) and their
    volume."""
    fmt = c.attr("data_format", "NCX")
    require(fmt in ("NCX", "NXC"), f"data_format {fmt!r}")
    x = c["input"].movedim(-1, 1) if fmt == "NXC" else c["input"]
    blocks = c.ints("block_size")
    _no_zero(blocks)
    volume = 1
    for k in blocks:
        volume *= k
    return x, fmt == "NXC", c.attr("blocks_first", True), blocks, volume


@translation("layout.space_to_depth", "output")
def space_to_depth(c: Call) -> Any:
    """block_size -> reshape [b, c, s/k, k, ..] and permute; blocks_first -> block position
    major in the channel (DCR) else channel major (CRD, F.pixel_unshuffle's order);
    data_format NXC -> permuted to NCX and back."""
    x, nxc, blocks_first, blocks, volume = _depth_layout(c)
    d = len(blocks)
    b, ch, spatial = x.shape[0], x.shape[1], list(x.shape[2:])
    split = [b, ch]
    for k, s in zip(blocks, spatial):
        split += [s // k, k]
    y = x.reshape(split)
    block_axes = [3 + 2 * i for i in range(d)]
    out_axes = [2 + 2 * i for i in range(d)]
    perm = [0] + (block_axes + [1] if blocks_first else [1] + block_axes) + out_axes
    y = y.permute(perm).reshape([b, ch * volume] + [s // k for k, s in zip(blocks, spatial)])
    return y.movedim(1, -1) if nxc else y


@translation("layout.depth_to_space", "output")
def depth_to_space(c: Call) -> Any:
    """The inverse of space_to_depth (blocks_first -> DCR, else CRD, F.pixel_shuffle's
    order): torch.reshape / permute."""
    x, nxc, blocks_first, blocks, volume = _depth_layout(c)
    d = len(blocks)
    b, ch, spatial = x.shape[0], x.shape[1], list(x.shape[2:])
    oc = ch // volume
    y = x.reshape([b] + (blocks + [oc] if blocks_first else [oc] + blocks) + spatial)
    block_at = 1 if blocks_first else 2
    channel_at = 1 + d if blocks_first else 1
    perm = [0, channel_at]
    for i in range(d):
        perm += [d + 2 + i, block_at + i]
    y = y.permute(perm).reshape([b, oc] + [s * k for k, s in zip(blocks, spatial)])
    return y.movedim(1, -1) if nxc else y


@translation("layout.shuffle", "output")
def shuffle(c: Call) -> Any:
    """axis, groups -> reshape the axis to [groups, c / groups], transpose the two, reshape
    back (F.channel_shuffle's definition, for any axis)."""
    x = c["input"]
    axis, groups = axis_of(c.attr("axis"), x.dim()), c.attr("groups")
    extent = x.shape[axis]
    _no_zero([groups])
    y = x.reshape(list(x.shape[:axis]) + [groups, extent // groups] +
                  list(x.shape[axis + 1:]))
    return y.transpose(axis, axis + 1).reshape(x.shape)


@translation("layout.nonzero", "index")
def nonzero(c: Call) -> Any:
    """No attributes: torch.nonzero(input).T (shape [rank, count])."""
    return torch.nonzero(c["input"]).T.contiguous()


@translation("layout.gather", "output")
def gather(c: Call) -> Any:
    """axis -> dim: torch.index_select with the flattened index, reshaped to
    s[:axis] + index.shape + s[axis+1:]."""
    data, index = c["data"], c["index"]
    axis = c.attr("axis")
    picked = torch.index_select(data, axis, index.reshape(-1))
    axis = axis_of(axis, data.dim())
    return picked.reshape(list(data.shape[:axis]) + list(index.shape) +
                          list(data.shape[axis + 1:]))


def _nd_index(c: Call, data: Any, indices: Any) -> tuple[Any, ...]:
    """Advanced-indexing tuple of gather_nd / scatter_nd: batch_dims leading aranges (shaped
    to broadcast against the index grid), then the last axis of `indices`."""
    batch = c.attr("batch_dims", 0)
    require(batch >= 0, f"batch_dims={batch} (torch indexing has no batch dims; the leading "
                        f"aranges need a count >= 0)")
    grid = list(indices.shape[:-1])
    parts = []
    for i in range(batch):
        shape = [1] * len(grid)
        shape[i] = grid[i]
        parts.append(torch.arange(grid[i]).reshape(shape))
    parts += [indices[..., j] for j in range(indices.shape[-1])]
    return tuple(parts)


@translation("layout.gather_nd", "output")
def gather_nd(c: Call) -> Any:
    """batch_dims -> leading arange index tensors; indices[..., j] -> advanced index of axis
    batch_dims + j: data[tuple]."""
    data, indices = c["data"], c["indices"]
    return data[_nd_index(c, data, indices)]


@translation("layout.scatter", "output")
def scatter(c: Call) -> Any:
    """axis -> dim: torch.scatter(data, dim, indices, updates) (no reduce)."""
    return torch.scatter(c["data"], axis_of(c.attr("axis"), c["data"].dim()), c["indices"],
                         c["updates"])


@translation("layout.scatter_nd", "output")
def scatter_nd(c: Call) -> Any:
    """batch_dims as gather_nd: Tensor.index_put(indices tuple, updates, accumulate=False)."""
    data, indices = c["data"], c["indices"]
    return data.index_put(_nd_index(c, data, indices), c["updates"], accumulate=False)

