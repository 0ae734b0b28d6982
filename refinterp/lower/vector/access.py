"""Tensor reads of the vector engine over one box (docs/performance.md, "The vector engine",
"Accesses"): positions with their guards resolved, strided views, zero padding and gathers.

An access whose indices are all affine in the axes (`2 * i + j - 1`, a constant, a plain axis)
is a strided view of the tensor (`as_strided`, no copy); any other is a gather by advanced
indexing. A guarded index `|e|` narrows the box's live mask, `|e <> lo : hi|` is a `where`.
A guarded access that is itself a factor of a `+=` contraction may instead read a zero-padded
view (zeros add nothing to a sum of products, provided every other factor is finite, which the
contraction checks).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np

from refinterp.language.values import Value
from refinterp.lower.common import Refused
from refinterp.lower.vector.space import Box, Mask, anywhere, both
from refinterp.numeric import rules
from refinterp.numeric.representation import kind_of


class Read(NamedTuple):
    """A tensor read over the box: its value, whether it reads zero padding, and the prepared
    tensor a strided view reads (None for a gather, computed in the box)."""

    value: Any
    padded: bool = False
    source: Prepared | None = None


@dataclass(frozen=True)
class Guard:
    """A guarded index value `|e|` (lower/upper: the remapped values of `|e <> lo : hi|`)."""

    value: Any
    lower: Any = None
    upper: Any = None


@dataclass(frozen=True)
class Mapped:
    """The values of an index pack without `..` (one dimension): the access is mapped over
    them, one read per item (docs/semantics.md "Pack index without '..'"; the reference's
    `_Mapped`)."""

    values: tuple


def resolve(box: Box, value: Any, extent: int, active: Mask) -> Any:
    """One index (an int or an int array, possibly guarded) checked against `extent` on the
    iterations evaluated (live and `active`): a guarded one outside narrows the live mask or is
    remapped, an unguarded one outside is a Refused (the reference reports it). Indices
    of skipped iterations are clipped into range, so the read itself cannot fail."""
    if isinstance(value, np.ndarray):  # an axis of the box inside the extent: itself
        axis = box.axis_of(value)
        if axis is not None and box.spans[axis][0] >= 0 and box.spans[axis][1] <= extent:
            return value
    effective = both(box.live, active)
    if isinstance(value.value if isinstance(value, Guard) else value, rules.IntInfinity):
        raise Refused("int(inf) or int(-inf) as an index")
    if isinstance(value, Guard):
        index = value.value
        if kind_of(index) != "int" or any(
                bound is not None and (kind_of(bound) != "int" or
                                       isinstance(bound, rules.IntInfinity))
                for bound in (value.lower, value.upper)):
            raise Refused("a guarded index or remapped value that is not an int")
        inside = (index >= 0) & (index < extent)
        if value.lower is None:
            box.narrow(inside, effective)
            if not isinstance(inside, np.ndarray):
                return min(max(int(index), 0), max(extent - 1, 0))
            return np.clip(index, 0, max(extent - 1, 0))
        value = np.where(index < 0, value.lower, np.where(index >= extent, value.upper, index))
        if value.ndim == 0:
            value = int(value)
    if isinstance(value, (bool, np.bool_)) or kind_of(value) != "int":
        raise Refused("an index that is not an int")
    if isinstance(value, np.ndarray):
        bad = (value < 0) | (value >= extent)
        if anywhere(both(bad, effective)) and bad.any():
            raise Refused("an index out of range")
        return np.clip(value, 0, max(extent - 1, 0)) if bad.any() else value
    if not 0 <= value < extent:
        if anywhere(effective):
            raise Refused("an index out of range")
        return 0
    return int(value)


def plain(box: Box, positions: list[Any]) -> list[tuple[str, int]] | None:
    """Each dimension as ('const', value) or ('axis', a), if every position is a constant or a
    distinct vectorised axis; else None."""
    result, seen = [], set()
    for p in positions:
        if isinstance(p, (int, np.integer)) and not isinstance(p, bool):
            result.append(("const", int(p)))
            continue
        axis = box.axis_of(p)
        if axis is None or axis in seen:
            return None
        seen.add(axis)
        result.append(("axis", axis))
    return result


def selection(box: Box, plain_positions: list[tuple[str, int]]) -> tuple:
    """The basic index (ints and slices) of plain positions over the box."""
    return tuple(v if k == "const" else slice(*box.spans[v]) for k, v in plain_positions)


def gather(box: Box, array: np.ndarray, positions: list[Any]) -> Any:
    """array[positions] over the box (a view where every index is a constant or an axis)."""
    if array.size == 0:
        # an empty tensor: every iteration reading it is skipped (`resolve` checked that the
        # evaluated ones are in range), so any value of the right shape stands in
        shape = np.broadcast_shapes((1,) * len(box.shape),
                                    *[p.shape for p in positions if isinstance(p, np.ndarray)])
        return np.zeros(shape, dtype=array.dtype)
    found = plain(box, positions)
    if found is not None:
        view = array[selection(box, found)]
        kept = [v for k, v in found if k == "axis"]
        if not kept:
            return python_value(view)
        order = sorted(range(len(kept)), key=lambda i: kept[i])
        view = view.transpose(order)
        shape = [1] * len(box.shape)
        for a in sorted(kept):
            shape[a] = box.shape[a]
        return view.reshape(shape)
    result = array[tuple(positions)]
    return python_value(result) if result.ndim == 0 else result


def affine(value: Any, shape: tuple) -> tuple[int, dict[int, int]] | None:
    """An int index as origin + sum of coefficient * (position along axis a in the box), or
    None if it is not affine in the axes."""
    if isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_)):
        return int(value), {}
    if not isinstance(value, np.ndarray) or value.dtype != np.int64 or \
            value.ndim != len(shape):
        return None
    corner = (0,) * value.ndim
    origin = int(value[corner])
    coefficients: dict[int, int] = {}
    rebuilt: Any = origin
    for a in range(value.ndim):
        if value.shape[a] > 1:
            step = list(corner)
            step[a] = 1
            coefficients[a] = int(value[tuple(step)]) - origin
            ramp = np.arange(value.shape[a], dtype=np.int64).reshape(
                [value.shape[a] if b == a else 1 for b in range(value.ndim)])
            rebuilt = rebuilt + coefficients[a] * ramp
    if not np.array_equal(np.broadcast_to(rebuilt, value.shape), value):
        return None
    return origin, {a: c for a, c in coefficients.items() if c}


class Prepared:
    """A tensor as strided views read it: zero-padded by `pads` and in C order (a copy if the
    input is a non-contiguous view); whether all its values are finite is found when first
    asked."""

    def __init__(self, array: np.ndarray, pads: tuple) -> None:
        self.array = array
        base = np.pad(array, pads) if any(b or a for b, a in pads) else array
        self.base = np.ascontiguousarray(base)
        self._finite: bool | None = None

    @property
    def finite(self) -> bool:
        if self._finite is None:
            self._finite = bool(np.isfinite(self.base).all())
        return self._finite


class Inputs:
    """The tensors strided views read, prepared once per run, not per box (every box of a
    chunked run reuses them): by tensor (its name and pack item) and padding, each checked to
    be of the very array it was made from."""

    def __init__(self) -> None:
        self.prepared: dict[tuple, Prepared] = {}

    def prepare(self, tensor: tuple[str, int | None], array: np.ndarray, pads: tuple
                ) -> Prepared:
        key = (tensor, pads)
        found = self.prepared.get(key)
        if found is None or found.array is not array:
            found = self.prepared[key] = Prepared(array, pads)
        return found


def all_finite(factor: np.ndarray, source: Prepared | None) -> bool:
    """Is every value `factor` reads finite? A strided view answers for the tensor it reads
    (`source`, checked once per run), so a broadcast view is never expanded."""
    if source is None:
        return bool(np.isfinite(factor).all())  # computed in this box
    return source.finite


def strided_view(box: Box, inputs: Inputs, tensor: tuple[str, int | None], raw: list[Any],
                 array: np.ndarray, padding: bool) -> Read | None:
    """A strided view of `array` (the tensor named by `tensor`) at the indices `raw` (each a
    value over the box, possibly guarded), if every index is affine in the axes; else None.
    With `padding`, a guarded index reaching outside the tensor reads a zero-padded copy
    instead."""
    if len(raw) != array.ndim or not box.axis_arrays:
        return None
    plain_view = _plain_view(box, inputs, tensor, raw, array)
    if plain_view is not None:
        return plain_view
    terms, guarded = [], []
    for value in raw:
        is_guard = isinstance(value, Guard)
        if is_guard and value.lower is not None:
            return None
        raw_index = value.value if is_guard else value
        axis = box.axis_of(raw_index)
        term = (box.spans[axis][0], {axis: 1}) if axis is not None else \
            affine(raw_index, box.shape)
        if term is None:
            return None
        terms.append(term)
        guarded.append(is_guard)
    pads = []
    for (origin, coefficients), extent, is_guard in zip(terms, array.shape, guarded):
        low = origin + sum(min(0, c * (box.shape[a] - 1)) for a, c in coefficients.items())
        high = origin + sum(max(0, c * (box.shape[a] - 1)) for a, c in coefficients.items())
        before, after = max(0, -low), max(0, high - (extent - 1))
        if (before or after) and not (is_guard and padding):
            return None
        pads.append((before, after))
    padded = any(before or after for before, after in pads)
    if padded and sum(b + a for b, a in pads) > 4 * sum(array.shape):
        return None  # mostly padding: the gather is cheaper
    source = inputs.prepare(tensor, array, tuple(pads))
    base = source.base
    item = base.itemsize
    offset = sum((origin + before) * st for (origin, _), (before, _), st in
                 zip(terms, pads, base.strides))
    strides = [0] * len(box.shape)
    for (_, coefficients), st in zip(terms, base.strides):
        for a, c in coefficients.items():
            strides[a] += c * st
    shape = [box.shape[a] if strides[a] or any(a in c for _, c in terms) else 1
             for a in range(len(box.shape))]
    flat = base.reshape(-1)[offset // item:]
    view = np.lib.stride_tricks.as_strided(flat, shape=shape, strides=strides, writeable=False)
    if not any(coefficients for _, coefficients in terms):
        return Read(python_value(view.reshape(())), padded)
    return Read(view, padded, source)


def _plain_view(box: Box, inputs: Inputs, tensor: tuple[str, int | None], raw: list[Any],
                array: np.ndarray) -> Read | None:
    """`strided_view` where every index is a distinct axis of the box inside the tensor (the
    common `x[i..]`): a basic slice of the tensor, its dimensions put in axis order and the
    box's other axes inserted with extent 1 — the same view, without the general path's
    affine analysis and `as_strided` (a sixth of a small operator's run). None otherwise."""
    if not raw:  # a rank-0 tensor (its C-order copy would be rank 1)
        return None
    axes = []
    for value, extent in zip(raw, array.shape):
        axis = box.axis_of(value) if isinstance(value, np.ndarray) else None
        if axis is None or axis in axes:
            return None
        lo, hi = box.spans[axis]
        if lo < 0 or hi > extent:
            return None
        axes.append(axis)
    source = inputs.prepare(tensor, array, tuple((0, 0) for _ in raw))
    view = source.base[tuple(slice(*box.spans[a]) for a in axes)]
    order = sorted(range(len(axes)), key=axes.__getitem__)
    shape = [1] * len(box.shape)
    for a in axes:
        shape[a] = box.shape[a]
    view = view.transpose(order).reshape(shape)
    if view.flags.writeable:
        view = view.view()
        view.flags.writeable = False
    return Read(view, False, source)


def python_value(value: np.ndarray) -> Value:
    """A one-element array as a Python value of its kind."""
    value = np.asarray(value)
    kind = kind_of(value)
    if kind == "bool":
        return bool(value)
    if kind == "int":
        return int(value)
    return float(value)


def int_identity(op: str, a: Any, b: Any) -> np.ndarray | None:
    """`x + 0`, `0 + x`, `x - 0`, `x * 1`, `1 * x` on an int array: x itself (the same
    object, so an index like `g * m + i` with g fixed at 0 stays recognisably the axis i)."""
    for array, other, ops in ((a, b, ("+", "-")), (b, a, ("+",))):
        if isinstance(array, np.ndarray) and array.dtype == np.int64 and \
                type(other) is int and ((other == 0 and op in ops) or
                                        (other == 1 and op == "*")):
            return array
    return None
