"""The strided view model: a flat buffer read through shape, strides, offset and an optional
mask (the model of Nx's `Nx_core.View`: docs/nx.md, docs/golden.md "Input layouts (views)").

A `View` addresses element `(i_0, …, i_{r-1})` at `offset + Σ i_k·strides[k]` of a 1-D buffer,
strides and offset counted in **elements** (not bytes). A zero stride repeats one element along
an axis (broadcasting), a negative one walks the buffer backwards (a flip); a `mask` holds one
half-open interval `[start, end)` per axis, and an element outside it is not read at all: it is
virtual padding, whose value `materialize` gives as 0 (False for bools).

The functions keep the seed's names and rules; each docstring quotes the seed's sentence it
implements. Two kinds of failure mirror the seed's exceptions: `InvalidArgument` (OCaml's
`Invalid_argument`: the arguments are wrong) and `ViewFailure` (`Failure`: the arguments are
right but the view cannot express the result, e.g. reshaping a transposed view). Shapes here
are concrete: SkriptND's golden fixtures have no symbolic extents, so the seed's symbolic
clauses (`numel` as a symbolic dim, failing until dimensions are bound) reduce to integers.

The golden fixtures describe an input's layout with `as_json` / `from_json` (docs/golden.md,
"Input layouts (views)"); `as_numpy_view` and `materialize` turn a buffer and a view into the
array a back end is given.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np
from numpy.lib.stride_tricks import as_strided

Interval = tuple[int, int]


class ViewError(ValueError):
    """A view operation that cannot be done (the base of the two kinds below)."""


class InvalidArgument(ViewError):
    """The seed's `Invalid_argument`: wrong arguments (ranks, sizes, a non-permutation, …)."""


class ViewFailure(ViewError):
    """The seed's `Failure`: the result exists but no view expresses it without copying."""


@dataclass(frozen=True)
class View:
    """A view encapsulating tensor layout information; "Views are immutable. Operations return
    new views without modifying the original." Build one with `create`, which normalizes it
    (zero-size and full-mask rules); the constructor only checks that the ranks agree."""

    shape: tuple[int, ...]
    strides: tuple[int, ...]
    offset: int = 0
    mask: tuple[Interval, ...] | None = None

    def __post_init__(self) -> None:
        if len(self.strides) != len(self.shape) or \
                (self.mask is not None and len(self.mask) != len(self.shape)):
            raise InvalidArgument(f"a view of rank {len(self.shape)} needs as many strides "
                                  f"(and mask intervals); got {len(self.strides)}"
                                  f"{'' if self.mask is None else f' and {len(self.mask)}'}")

    @property
    def ndim(self) -> int:
        """"ndim view returns the number of dimensions … Scalars have ndim = 0.\""""
        return len(self.shape)

    @property
    def numel(self) -> int:
        """"numel view returns the total number of elements … Scalars return static 1.\""""
        return math.prod(self.shape)

    def as_json(self) -> dict[str, Any]:
        """`{"shape", "strides", "offset", "mask"}` as the golden fixtures write it (mask null
        or a list of `[start, end]` pairs)."""
        return {"shape": list(self.shape), "strides": list(self.strides), "offset": self.offset,
                "mask": None if self.mask is None else [list(m) for m in self.mask]}


# --------------------------------------------------------------------------- creation


def c_contiguous_strides(shape: Sequence[int]) -> tuple[int, ...]:
    """Row-major strides: "For shape [|2; 3; 4|], C-contiguous strides are [|12; 4; 1|]."
    (each stride is the product of the later extents, as NumPy counts them)."""
    strides, step = [], 1
    for extent in reversed(tuple(shape)):
        strides.append(step)
        step *= extent
    return tuple(reversed(strides))


def _ints(values: Sequence[Any], what: str) -> tuple[int, ...]:
    try:
        result = tuple(values)
    except TypeError:
        raise InvalidArgument(f"{what} must be a sequence of integers") from None
    if not all(isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_))
               for v in result):
        raise InvalidArgument(f"{what} must be integers, got {list(result)}")
    return tuple(int(v) for v in result)


def _shape(shape: Sequence[int]) -> tuple[int, ...]:
    result = _ints(shape, "a shape")
    if any(n < 0 for n in result):
        raise InvalidArgument(f"extents must not be negative, got {list(result)}")
    return result


def create(shape: Sequence[int], strides: Sequence[int] | None = None, offset: int = 0,
           mask: Sequence[Sequence[int]] | None = None) -> View:
    """`create ?offset ?strides ?mask shape` constructs a view: strides default to
    C-contiguous, offset to 0; "Masks with full coverage are automatically removed." and "If
    any dimension is zero-size, the offset is forced to 0 and masks are removed."

    A mask interval must satisfy 0 <= start <= end <= extent (start == end: nothing valid
    along that axis)."""
    shape = _shape(shape)
    strides = c_contiguous_strides(shape) if strides is None else _ints(strides, "strides")
    if len(strides) != len(shape):
        raise InvalidArgument(f"{len(strides)} strides for a shape of rank {len(shape)}")
    if isinstance(offset, (bool, np.bool_)) or not isinstance(offset, (int, np.integer)):
        raise InvalidArgument(f"the offset must be an integer, got {offset!r}")
    intervals = None
    if mask is not None:
        intervals = tuple(_ints(pair, "a mask interval") for pair in mask)
        if len(intervals) != len(shape) or any(len(p) != 2 for p in intervals):
            raise InvalidArgument(f"a mask is one (start, end) pair per axis ({len(shape)}), "
                                  f"got {[list(p) for p in intervals]}")
        for (start, end), extent in zip(intervals, shape):
            if not 0 <= start <= end <= extent:
                raise InvalidArgument(f"mask interval [{start}, {end}) is not inside "
                                      f"[0, {extent}]")
        if all(p == (0, n) for p, n in zip(intervals, shape)):
            intervals = None
    if 0 in shape:
        return View(shape, strides, 0, None)
    return View(shape, strides, int(offset), intervals)


# --------------------------------------------------------------------------- properties


def dim(axis: int, view: View) -> int:
    """"dim axis view returns the size of dimension axis. Negative indices are not
    supported\""""
    _axis(axis, view)
    return view.shape[axis]


def stride(axis: int, view: View) -> int:
    """"stride axis view returns the stride of dimension axis. Negative indices are not
    supported.\""""
    _axis(axis, view)
    return view.strides[axis]


def _axis(axis: int, view: View) -> None:
    if not 0 <= axis < view.ndim:
        raise InvalidArgument(f"axis {axis} is not in [0, {view.ndim})")


def is_c_contiguous(view: View) -> bool:
    """"Returns true if the view has zero offset, no mask, and strides matching the
    C-contiguous pattern for its shape." An axis of extent 1 is never stepped along, so its
    stride does not matter (as in NumPy), and a zero-size view addresses nothing, so it is
    C-contiguous whatever its strides."""
    if view.numel == 0:
        return True
    if view.offset != 0 or view.mask is not None:
        return False
    expected = c_contiguous_strides(view.shape)
    return all(n == 1 or s == e for n, s, e in zip(view.shape, view.strides, expected))


def simplify(view: View) -> View:
    """The view with a mask that covers every element removed (`create` already does this;
    kept because the seed's `strides_opt` "Calls simplify internally")."""
    return create(view.shape, view.strides, view.offset, view.mask)


def strides_opt(view: View) -> tuple[int, ...] | None:
    """"strides_opt view returns element strides when the view can be represented as a
    standard strided layout. Returns None when the view has a mask that restricts regions\""""
    view = simplify(view)
    return None if view.mask is not None else view.strides


def can_get_strides(view: View) -> bool:
    """"can_get_strides view is true when strides_opt would return Some _.\""""
    return strides_opt(view) is not None


def is_materializable(view: View) -> bool:
    """"Returns true if the shape is fully static and the view can produce standard
    strides." Shapes are always static here."""
    return can_get_strides(view)


# --------------------------------------------------------------------------- index operations


def linear_index(view: View, indices: Sequence[int]) -> int:
    """"Computes offset + sum(indices[i] * strides[i]) to map from logical coordinates to a
    buffer offset." (an index list of another rank is an InvalidArgument)."""
    indices = _ints(indices, "indices")
    if len(indices) != view.ndim:
        raise InvalidArgument(f"{len(indices)} indices for a view of rank {view.ndim}")
    return view.offset + sum(i * s for i, s in zip(indices, view.strides))


def is_valid(view: View, indices: Sequence[int]) -> bool:
    """"Returns true if the view has no mask, or if all indices satisfy start <= idx < end
    for their respective dimension bounds. Returns false if indices are out of bounds or the
    indices array length mismatches the view's rank." Read strictly: an index outside
    [0, extent) is never valid, masked or not."""
    indices = tuple(indices)
    if len(indices) != view.ndim or any(not 0 <= i < n for i, n in zip(indices, view.shape)):
        return False
    return view.mask is None or all(b <= i < e for i, (b, e) in zip(indices, view.mask))


# --------------------------------------------------------------------------- transformations


def reshape(view: View, new_shape: Sequence[int]) -> View:
    """`reshape view new_shape` "changes the logical shape without copying data … Succeeds
    when the reshape can be expressed through stride manipulation alone": C-contiguous views,
    adding or removing singleton dimensions, merging contiguous dimensions, splitting
    dimensions, all-zero strides. "Returns the same view if shapes are already equal."

    Raises InvalidArgument "if total elements differ, unless either the original or new shape
    is zero-size" (then the result is a fresh zero-offset C-contiguous view of `new_shape`, as
    the seed does); ViewFailure "if the view has a mask" and "if strides are incompatible with
    the new shape" (e.g. a transposed view to a merged shape: call contiguous() first)."""
    new_shape = _shape(new_shape)
    if new_shape == view.shape:
        return view
    old_size, new_size = view.numel, math.prod(new_shape)
    if old_size != new_size and old_size != 0 and new_size != 0:
        raise InvalidArgument(f"cannot reshape {list(view.shape)} ({old_size} elements) to "
                              f"{list(new_shape)} ({new_size} elements)")
    if old_size == 0 or new_size == 0:
        return create(new_shape)
    if view.mask is not None:
        raise ViewFailure("cannot reshape a view with a mask: materialize it (contiguous()) "
                          "first")
    if is_c_contiguous(view):
        return create(new_shape)
    strides = _no_copy_strides(view.shape, view.strides, new_shape)
    if strides is None:
        raise ViewFailure(f"cannot reshape {list(view.shape)} with strides "
                          f"{list(view.strides)} (expected {list(c_contiguous_strides(view.shape))}"
                          f") to {list(new_shape)} without copying: call contiguous() first")
    return create(new_shape, strides, view.offset)


def _no_copy_strides(shape: tuple[int, ...], strides: tuple[int, ...],
                     new_shape: tuple[int, ...]) -> tuple[int, ...] | None:
    """Strides that read the same elements in the same (C) order under `new_shape`, or None.

    Axes of extent 1 are dropped (never stepped along). The rest is cut into groups of old
    and new axes with equal products of extents; a group is expressible when its old axes are
    mutually contiguous (stride[k] == stride[k+1]·extent[k+1]), and its new axes then step
    from the group's innermost old stride. New axes of extent 1 get stride 0."""
    old = [(n, s) for n, s in zip(shape, strides) if n != 1]
    result = [0] * len(new_shape)
    real = [k for k, n in enumerate(new_shape) if n != 1]
    i = j = 0
    while i < len(old) and j < len(real):
        i_end, j_end = i + 1, j + 1
        old_product, new_product = old[i][0], new_shape[real[j]]
        while old_product != new_product:
            if old_product < new_product:
                old_product *= old[i_end][0]
                i_end += 1
            else:
                new_product *= new_shape[real[j_end]]
                j_end += 1
        if any(old[k][1] != old[k + 1][1] * old[k + 1][0] for k in range(i, i_end - 1)):
            return None
        step = old[i_end - 1][1]
        for k in reversed(real[j:j_end]):
            result[k] = step
            step *= new_shape[k]
        i, j = i_end, j_end
    return tuple(result) if i == len(old) and j == len(real) else None


def expand(view: View, new_shape: Sequence[int]) -> View:
    """`expand view new_shape` "Expands dimensions of size 1 to size n by setting their stride
    to 0 … Scalar views (rank 0) can expand to any shape with all strides set to 0. Zero-size
    tensors create a new zero-size view with the new shape." Raises InvalidArgument "if
    attempting to expand a non-singleton dimension" (or the ranks differ).

    A masked singleton axis stays valid everywhere (its interval was [0, 1)) or nowhere
    (it was empty)."""
    new_shape = _shape(new_shape)
    if view.ndim == 0:
        return create(new_shape, (0,) * len(new_shape), view.offset)
    if len(new_shape) != view.ndim:
        raise InvalidArgument(f"cannot expand a view of rank {view.ndim} to "
                              f"{list(new_shape)}")
    for axis, (n, m) in enumerate(zip(view.shape, new_shape)):
        if n != m and n != 1:
            raise InvalidArgument(f"cannot expand axis {axis} of extent {n} to {m}: only "
                                  f"singleton dimensions broadcast")
    if view.numel == 0 or 0 in new_shape:
        return create(new_shape)
    strides = tuple(s if n == m else 0 for n, m, s in zip(view.shape, new_shape, view.strides))
    mask = None
    if view.mask is not None:
        mask = tuple(interval if n == m else ((0, m) if interval[0] < interval[1] else (0, 0))
                     for n, m, interval in zip(view.shape, new_shape, view.mask))
    return create(new_shape, strides, view.offset, mask)


def permute(view: View, axes: Sequence[int]) -> View:
    """`permute view axes` "reorders dimensions by permuting shape and strides … axes[i]
    specifies which original dimension becomes the new dimension i … all values must be
    unique and in range [0, ndim)" (else InvalidArgument). The mask is permuted too."""
    axes = _ints(axes, "axes")
    if sorted(axes) != list(range(view.ndim)):
        raise InvalidArgument(f"{list(axes)} is no permutation of the {view.ndim} axes")
    mask = None if view.mask is None else tuple(view.mask[a] for a in axes)
    return create(tuple(view.shape[a] for a in axes), tuple(view.strides[a] for a in axes),
                  view.offset, mask)


def _pairs(pairs: Sequence[Sequence[int]], view: View, what: str) -> tuple[Interval, ...]:
    result = tuple(_ints(p, what) for p in pairs)
    if len(result) != view.ndim or any(len(p) != 2 for p in result):
        raise InvalidArgument(f"{what}: one pair per axis ({view.ndim}) expected, got "
                              f"{[list(p) for p in result]}")
    return result


def _clip(start: int, end: int, extent: int) -> Interval:
    """[start, end) ∩ [0, extent), written (0, 0) when empty."""
    start, end = max(start, 0), min(end, extent)
    return (start, end) if start < end else (0, 0)


def shrink(view: View, bounds: Sequence[Sequence[int]]) -> View:
    """`shrink view bounds` "restricts the view to a sub-region by slicing … Adjusts offset to
    point to the first element of the sub-region … For a dimension with size n, valid bounds
    are 0 <= start < end <= n. Bounds covering the entire dimension (0, n) for all dimensions
    return the view unchanged." (other bounds: InvalidArgument; (0, 0) is accepted on an axis
    of extent 0, as it covers it). A mask is cut to the sub-region."""
    bounds = _pairs(bounds, view, "shrink bounds")
    for axis, ((start, end), n) in enumerate(zip(bounds, view.shape)):
        if (start, end) != (0, n) and not 0 <= start < end <= n:
            raise InvalidArgument(f"shrink bounds [{start}, {end}) of axis {axis} are not "
                                  f"within 0 <= start < end <= {n}")
    if all(b == (0, n) for b, n in zip(bounds, view.shape)):
        return view
    shape = tuple(end - start for start, end in bounds)
    offset = view.offset + sum(start * s for (start, _), s in zip(bounds, view.strides))
    mask = None
    if view.mask is not None:
        mask = tuple(_clip(b - start, e - start, n) for (b, e), (start, _), n in
                     zip(view.mask, bounds, shape))
    return create(shape, view.strides, offset, mask)


def pad(view: View, padding: Sequence[Sequence[int]]) -> View:
    """`pad view padding` "virtually extends dimensions by adding padding regions … The shape
    increases by before + after per dimension, the offset decreases by the sum of
    before_i * stride_i across all dimensions to account for the virtual prefix, and a mask
    records valid bounds. Padding with all zeros returns the view unchanged." Negative
    padding is an InvalidArgument (shrink removes elements). The offset may become negative:
    only the valid elements' addresses are ever read."""
    padding = _pairs(padding, view, "padding")
    if any(b < 0 or a < 0 for b, a in padding):
        raise InvalidArgument(f"padding {[list(p) for p in padding]} is negative: use shrink")
    if all(p == (0, 0) for p in padding):
        return view
    shape = tuple(n + b + a for n, (b, a) in zip(view.shape, padding))
    offset = view.offset - sum(b * s for (b, _), s in zip(padding, view.strides))
    old = view.mask if view.mask is not None else tuple((0, n) for n in view.shape)
    mask = tuple((start + b, end + b) for (start, end), (b, _) in zip(old, padding))
    return create(shape, view.strides, offset, mask)


def flip(view: View, axes_to_flip: Sequence[bool]) -> View:
    """`flip view axes_to_flip` "For each dimension i where axes_to_flip[i] = true, negates
    the stride and adjusts the offset to point to the last element along that dimension …
    If the view has a mask, the mask bounds are also flipped to reflect the reversed order."
    (a flag list of another rank is an InvalidArgument)."""
    flags = tuple(axes_to_flip)
    if len(flags) != view.ndim or not all(isinstance(f, (bool, np.bool_)) for f in flags):
        raise InvalidArgument(f"flip takes one bool per axis ({view.ndim}), got {list(flags)}")
    offset = view.offset + sum((n - 1) * s for n, s, f in
                               zip(view.shape, view.strides, flags) if f)
    strides = tuple(-s if f else s for s, f in zip(view.strides, flags))
    mask = None
    if view.mask is not None:
        mask = tuple((n - e, n - b) if f else (b, e)
                     for (b, e), n, f in zip(view.mask, view.shape, flags))
    return create(view.shape, strides, offset, mask)


# --------------------------------------------------------------------------- buffers


def _flat(buffer: Any) -> np.ndarray:
    array = np.asarray(buffer)
    if array.ndim != 1:
        raise ValueError(f"a view reads a 1-D buffer, got one of shape {list(array.shape)}")
    return np.ascontiguousarray(array)


def addresses(view: View) -> np.ndarray:
    """The buffer address of every element (an int64 array of the view's shape), masked
    elements included."""
    result = np.full(view.shape, view.offset, dtype=np.int64)
    for axis, (n, s) in enumerate(zip(view.shape, view.strides)):
        steps = np.arange(n, dtype=np.int64) * s
        result = result + steps.reshape((n,) + (1,) * (view.ndim - axis - 1))
    return result


def valid_elements(view: View) -> np.ndarray:
    """A bool array of the view's shape: True where `is_valid` (inside the mask)."""
    valid = np.ones(view.shape, dtype=bool)
    if view.mask is not None:
        for axis, ((b, e), n) in enumerate(zip(view.mask, view.shape)):
            index = np.arange(n)
            inside = (index >= b) & (index < e)
            valid &= inside.reshape((n,) + (1,) * (view.ndim - axis - 1))
    return valid


def check_bounds(buffer_length: int, view: View) -> None:
    """Raise ValueError unless every valid element's address lies in [0, buffer_length)."""
    if view.numel == 0:
        return
    used = addresses(view)[valid_elements(view)]
    if used.size and (used.min() < 0 or used.max() >= buffer_length):
        raise ValueError(f"the view reads addresses {int(used.min())}..{int(used.max())} of a "
                         f"buffer of {buffer_length} elements")


def materialize(buffer: Any, view: View) -> np.ndarray:
    """The logical array a view of `buffer` (1-D) denotes, as a new C-contiguous array:
    element i is `buffer[linear_index(view, i)]` where `is_valid`, and the padding value 0
    (0.0, 0, False) where the mask excludes it (the seed leaves masked values unspecified;
    the fixtures fix them to 0, the value `pad` operators give)."""
    flat = _flat(buffer)
    check_bounds(flat.size, view)
    result = np.zeros(view.shape, dtype=flat.dtype)
    if view.numel:
        valid = valid_elements(view)
        result[valid] = flat[addresses(view)[valid]]
    return result


def as_numpy_view(buffer: Any, view: View) -> np.ndarray | None:
    """A real, read-only strided NumPy view of `buffer` (1-D, C-contiguous: not copied) that
    reads exactly the elements of `view` — its strides are the view's times the item size,
    negative and zero ones included; None when the view has a mask (NumPy cannot express
    one: `materialize` it instead). ValueError when the view reads outside the buffer."""
    if strides_opt(view) is None:
        return None
    flat = _flat(buffer)
    check_bounds(flat.size, view)
    start = flat[view.offset:] if view.numel else flat
    return as_strided(start, shape=view.shape,
                      strides=tuple(s * flat.itemsize for s in view.strides), writeable=False)


def from_json(data: Any) -> View:
    """The view of a fixture's `{"shape", "strides", "offset", "mask"}` object (docs/golden.md,
    "Input layouts (views)"), normalized by `create`; InvalidArgument when it is malformed."""
    if not isinstance(data, dict):
        raise InvalidArgument("a view is an object {shape, strides, offset, mask}")
    for key in ("shape", "strides"):
        if not isinstance(data.get(key), list):
            raise InvalidArgument(f"a view's '{key}' must be a list of integers")
    mask = data.get("mask")
    if mask is not None and (not isinstance(mask, list) or
                             not all(isinstance(p, list) for p in mask)):
        raise InvalidArgument("a view's 'mask' must be null or a list of [start, end] pairs")
    numbers = [*data["shape"], *data["strides"], data.get("offset", 0),
               *(x for pair in mask or () for x in pair)]
    if any(isinstance(x, int) and not isinstance(x, bool) and not -2**63 <= x < 2**63
           for x in numbers):  # an address beyond int64 is no address
        raise InvalidArgument("a view's numbers must lie within int64's range")
    return create(data["shape"], data["strides"], data.get("offset", 0), mask)
