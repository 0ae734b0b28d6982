"""JAX translations of the creation, movement, conversion, indexing, unfold / fold and
threefry primitives of `nx`. Each docstring gives the mapping (nx attribute -> JAX argument).
"""

from __future__ import annotations

import math
from typing import Any

import jax
import jax.numpy as jnp
from jax import lax
from jax.extend import random as jax_random

from refinterp.backends.jax_common import (DTYPES, NX_DTYPES, Call, pairs, translation,
                                          unsupported)

# --------------------------------------------------------------------------- creation, copies


@translation("nx.full", "out")
def full(c: Call) -> Any:
    """shape -> `shape` of `lax.full(shape, value, value.dtype)` (value a rank-0 input)."""
    value = c["value"]
    return lax.full(tuple(c.ints("shape")), value, value.dtype)


@translation("nx.from_host", "out")
def from_host(c: Call) -> Any:
    """No attributes: `jnp.asarray(buf)` (the buffer's values as a rank-1 array)."""
    return jnp.asarray(c["buf"])


@translation("nx.to_host", "buf")
def to_host(c: Call) -> Any:
    """No attributes: `jnp.ravel(t)` (row-major, C order)."""
    return jnp.ravel(c["t"], order="C")


@translation("nx.contiguous", "out")
def contiguous(c: Call) -> Any:
    """No attributes: `jnp.asarray(t)` (a JAX array is always dense, row-major)."""
    return jnp.asarray(c["t"])


@translation("nx.copy", "out")
def copy(c: Call) -> Any:
    """No attributes: `jnp.copy(t)`."""
    return jnp.copy(c["t"])


@translation("nx.assign", "out")
def assign(c: Call) -> Any:
    """No attributes: `dst.at[...].set(src)` (the functional form of the in-place write)."""
    return c["dst"].at[...].set(c["src"])


# --------------------------------------------------------------------------- movement


@translation("nx.expand", "out")
def expand(c: Call) -> Any:
    """shape -> `shape` of `lax.broadcast_in_dim(t, shape, range(t.ndim))` (axes matched one
    to one: extents 1 are broadcast, others must already match)."""
    t = c["t"]
    return lax.broadcast_in_dim(t, tuple(c.ints("shape")), tuple(range(t.ndim)))


@translation("nx.reshape", "out")
def reshape(c: Call) -> Any:
    """shape -> `new_sizes` of `lax.reshape(t, shape)` (row-major)."""
    return lax.reshape(c["t"], tuple(c.ints("shape")))


@translation("nx.permute", "out")
def permute(c: Call) -> Any:
    """axes -> `permutation` of `lax.transpose(t, axes)` (output axis j is input axis
    axes[j])."""
    return lax.transpose(c["t"], tuple(c.ints("axes")))


@translation("nx.shrink", "out")
def shrink(c: Call) -> Any:
    """ranges [start_0, stop_0, ...] -> `lax.slice(t, starts, stops)`."""
    ranges = pairs(c.ints("ranges"))
    return lax.slice(c["t"], tuple(a for a, _ in ranges), tuple(b for _, b in ranges))


@translation("nx.flip", "out")
def flip(c: Call) -> Any:
    """axes (one bool per axis) -> `dimensions` of `lax.rev(t, [i where axes[i]])`."""
    axes = c.attr("axes", [])
    axes = axes if isinstance(axes, (list, tuple)) else [axes]
    return lax.rev(c["t"], tuple(i for i, flag in enumerate(axes) if flag))


@translation("nx.pad", "out")
def pad(c: Call) -> Any:
    """padding [before_0, after_0, ...] -> `padding_config` [(before, after, 0), ...] of
    `lax.pad(t, fill_value, padding_config)` (no interior padding)."""
    config = [(a, b, 0) for a, b in pairs(c.ints("padding"))]
    return lax.pad(c["t"], c["fill_value"], config)


@translation("nx.cat", "out")
def cat(c: Call) -> Any:
    """axis -> `dimension` of `lax.concatenate(tensors, axis)`."""
    return lax.concatenate(list(c["tensors"]), int(c.attr("axis")))


@translation("nx.cast", "out")
def cast(c: Call) -> Any:
    """The generic R (real / int / bool) -> `new_dtype` (float64 / int64 / bool; a typed
    case's `out` type: int8 ... bfloat16) of `lax.convert_element_type(x, new_dtype)` (XLA
    saturates a real beyond an int type's range, as the contract's typed cast)."""
    return lax.convert_element_type(c["x"], c.dtype("out", DTYPES[c.generics[0]]))


@translation("nx.as_type", "out")
def as_type(c: Call) -> Any:
    """type -> `new_dtype` (NX_DTYPES) of `lax.convert_element_type(x, new_dtype)`, the
    result back in x's dtype (nx.as_type keeps x's representation); saturate -> `lax.clamp`
    of x to the type's range first (XLA wraps an int narrowed without it)."""
    x, dtype = c["x"], NX_DTYPES[c.attr("type")]
    if c.attr("saturate", False) and jnp.issubdtype(dtype, jnp.integer):
        info = jnp.iinfo(dtype)
        x = lax.clamp(jnp.asarray(info.min, x.dtype), x, jnp.asarray(info.max, x.dtype))
    return lax.convert_element_type(lax.convert_element_type(x, dtype), x.dtype)


# --------------------------------------------------------------------------- gather, scatter


@translation("nx.gather", "out")
def gather(c: Call) -> Any:
    """axis -> `axis` of `jnp.take_along_axis(data', indices, axis)`, where data' is
    `lax.slice` of data to the extents of `indices` on every other axis (the contract lets
    those be smaller than data's; take_along_axis wants them equal). Index mode: JAX's
    default."""
    data, indices, axis = c["data"], c["indices"], int(c.attr("axis"))
    if data.ndim == indices.ndim:  # else take_along_axis rejects the ranks itself
        limits = tuple(data.shape[k] if k == axis else indices.shape[k]
                       for k in range(data.ndim))
        data = lax.slice(data, (0,) * data.ndim, limits)
    return jnp.take_along_axis(data, indices, axis=axis)


SCATTER_MODES = {"Set": "set", "Add": "add"}


@translation("nx.scatter", "out")
def scatter(c: Call) -> Any:
    """axis -> the position of `indices` in the index tuple of
    `template.at[idx].set(updates)` ('Set') or `.add(updates)` ('Add'), every other entry
    of `idx` a `lax.broadcasted_iota` over indices' shape; unique_indices ->
    `unique_indices` (JAX's hint, as the contract's). Other modes are unsupported."""
    mode = c.attr("mode", "Set")
    if mode not in SCATTER_MODES:
        raise unsupported(f"scatter mode {mode!r} (the contract has Set and Add)")
    return _scatter(c, mode)


@translation("nx.scatter_set", "out")
def scatter_set(c: Call) -> Any:
    """As nx.scatter with mode 'Set': axis -> the position of `indices` in the index tuple
    of `template.at[idx].set(updates)`."""
    return _scatter(c, "Set")


@translation("nx.scatter_add", "out")
def scatter_add(c: Call) -> Any:
    """As nx.scatter with mode 'Add': `template.at[idx].add(updates)`."""
    return _scatter(c, "Add")


def _scatter(c: Call, mode: str) -> Any:
    template, indices, axis = c["template"], c["indices"], int(c.attr("axis"))
    if template.ndim != indices.ndim:
        raise unsupported("scatter indices of another rank than the template")
    index = tuple(indices if k == axis else lax.broadcasted_iota(jnp.int64, indices.shape, k)
                  for k in range(indices.ndim))
    at = template.at[index]
    method = getattr(at, SCATTER_MODES[mode])
    return method(c["updates"], unique_indices=bool(c.attr("unique_indices", False)))


# --------------------------------------------------------------------------- unfold, fold


def _unfold(t: Any, kernel: list[int], stride: list[int], dilation: list[int],
            padding: list[tuple[int, int]]) -> Any:
    """nx.unfold by `lax.conv_general_dilated_patches` on t reshaped to
    [prod(leading), 1, spatial..] (one channel, so patch rows are the kernel taps in
    row-major order), reshaped to [leading.., prod(kernel), prod(windows)]."""
    k = len(kernel)
    leading, spatial = t.shape[:t.ndim - k], t.shape[t.ndim - k:]
    lhs = t.reshape((math.prod(leading), 1) + tuple(spatial))
    patches = lax.conv_general_dilated_patches(
        lhs, filter_shape=tuple(kernel), window_strides=tuple(stride), padding=padding,
        rhs_dilation=tuple(dilation), precision=lax.Precision.HIGHEST)
    windows = math.prod(patches.shape[2:])
    return patches.reshape(tuple(leading) + (math.prod(kernel), windows))


def _geometry(c: Call) -> tuple[list[int], list[int], list[int], list[tuple[int, int]]]:
    """kernel_size, stride, dilation and padding pairs, as given (JAX checks them)."""
    kernel, stride, dilation = c.ints("kernel_size"), c.ints("stride"), c.ints("dilation")
    return kernel, stride, dilation, pairs(c.ints("padding"))


@translation("nx.unfold", "out")
def unfold(c: Call) -> Any:
    """kernel_size -> `filter_shape`, stride -> `window_strides`, dilation ->
    `rhs_dilation`, padding pairs -> `padding` of `lax.conv_general_dilated_patches` (one
    input channel; the leading axes folded into the batch and restored afterwards)."""
    kernel, stride, dilation, padding = _geometry(c)
    return _unfold(c["t"], kernel, stride, dilation, padding)


@translation("nx.fold", "out")
def fold(c: Call) -> Any:
    """output_size, kernel_size, stride, dilation, padding as for unfold: fold is
    `jax.linear_transpose` of that unfold at an input of shape [leading.., output_size..]
    (the adjoint of im2col sums overlapping windows and drops padded positions). Reals
    only: JAX transposes only real-valued linear functions."""
    kernel, stride, dilation, padding = _geometry(c)
    t = c["t"]
    if not jnp.issubdtype(t.dtype, jnp.floating):
        raise unsupported("fold of ints (jax.linear_transpose needs floating-point values)")
    shape = tuple(t.shape[:-2]) + tuple(c.ints("output_size"))
    primal = jax.ShapeDtypeStruct(shape, t.dtype)
    transpose = jax.linear_transpose(
        lambda x: _unfold(x, kernel, stride, dilation, padding), primal)
    (out,) = transpose(t)
    return out


# --------------------------------------------------------------------------- threefry


@translation("nx.threefry", "out")
def threefry(c: Call) -> Any:
    """No attributes: `jax.vmap` of `jax.extend.random.threefry_2x32((k0, k1), [c0, c1])`
    over every (key, counter) pair of the last axis (the public function takes one key, so
    vmap maps it over the pairs; a two-word count hashes as the pair (c0, c1)). The int
    words are converted to uint32 by `lax.convert_element_type` (two's complement) and
    the result back through int32 (`lax.bitcast_convert_type`)."""
    key, counter = c["key"], c["counter"]
    if key.shape != counter.shape or key.shape[-1:] != (2,):
        raise unsupported(f"threefry of key {key.shape} and counter {counter.shape} "
                          f"(pairs of equal shapes [..., 2])")
    words = [lax.convert_element_type(a, jnp.uint32).reshape(-1, 2) for a in (key, counter)]

    def hash_pair(k: Any, x: Any) -> Any:
        return jax_random.threefry_2x32((k[0], k[1]), x)

    out = jax.vmap(hash_pair)(*words)
    out = lax.bitcast_convert_type(out, jnp.int32).astype(jnp.int64)
    return out.reshape(key.shape)
