"""The strided view model (refinterp.numeric.views, seed 001: Nx's `View`): the seed's documented
examples, successes and failures, then property tests against NumPy, which computes every
expected array here independently (`as_strided`, `np.ndarray(buffer=…)`, transpose,
broadcast_to, reversed slices, slicing, `np.pad`, `reshape(copy=False)`)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.lib.stride_tricks import as_strided

from refinterp.numeric import views as V
from refinterp.numeric.views import InvalidArgument, View, ViewFailure

# --------------------------------------------------------------------------- the seed's examples


def test_c_contiguous_strides_of_the_seed() -> None:
    # "For shape [|2; 3; 4|], C-contiguous strides are [|12; 4; 1|]."
    assert V.c_contiguous_strides([2, 3, 4]) == (12, 4, 1)
    assert V.create([2, 3, 4]).strides == (12, 4, 1)
    assert V.c_contiguous_strides([]) == ()


def test_linear_index_of_the_seed() -> None:
    # "shape |2; 3|, strides |3; 1|, and offset 5, accessing [1; 2] yields 10"
    view = V.create([2, 3], [3, 1], 5)
    assert V.linear_index(view, [1, 2]) == 10
    assert V.linear_index(V.create([]), []) == 0
    with pytest.raises(InvalidArgument):
        V.linear_index(view, [1])


def test_expanding_a_scalar_gives_zero_strides() -> None:
    # "expanding a scalar to shape [|3; 3|] uses strides [|0; 0|]"
    view = V.expand(V.create([], offset=4), [3, 3])
    assert view.shape == (3, 3) and view.strides == (0, 0) and view.offset == 4


def test_properties() -> None:
    view = V.create([2, 5], [7, -1], 9)
    assert view.ndim == 2 and view.numel == 10
    assert V.create([]).ndim == 0 and V.create([]).numel == 1
    assert V.dim(1, view) == 5 and V.stride(1, view) == -1
    for function in (V.dim, V.stride):
        with pytest.raises(InvalidArgument):
            function(-1, view)  # "Negative indices are not supported"
        with pytest.raises(InvalidArgument):
            function(2, view)


def test_create_defaults_and_validation() -> None:
    view = V.create([3, 4])
    assert (view.offset, view.mask) == (0, None)
    with pytest.raises(InvalidArgument):
        V.create([3, 4], [1])
    with pytest.raises(InvalidArgument):
        V.create([-1])
    with pytest.raises(InvalidArgument):
        V.create([3], mask=[(0, 4)])  # the interval leaves the axis
    with pytest.raises(InvalidArgument):
        V.create([3], mask=[(2, 1)])
    with pytest.raises(InvalidArgument):
        V.create([3, 4], mask=[(0, 3)])
    with pytest.raises(InvalidArgument):
        View((3,), (1, 1))


def test_full_masks_are_removed() -> None:
    # "Masks with full coverage are automatically removed."
    assert V.create([2, 3], mask=[(0, 2), (0, 3)]).mask is None
    assert V.create([2, 3], mask=[(0, 2), (1, 3)]).mask == ((0, 2), (1, 3))


def test_zero_size_forces_offset_zero_and_drops_the_mask() -> None:
    # "If any dimension is zero-size, the offset is forced to 0 and masks are removed."
    view = V.create([0, 3], [5, 2], 7, mask=[(0, 0), (1, 2)])
    assert view == View((0, 3), (5, 2), 0, None)
    assert V.is_c_contiguous(view) and V.strides_opt(view) == (5, 2)


def test_is_c_contiguous() -> None:
    # "zero offset, no mask, and strides matching the C-contiguous pattern"
    assert V.is_c_contiguous(V.create([2, 3]))
    assert not V.is_c_contiguous(V.create([2, 3], offset=1))
    assert not V.is_c_contiguous(V.create([2, 3], [1, 2]))
    assert not V.is_c_contiguous(V.create([2, 3], mask=[(0, 1), (0, 3)]))
    assert V.is_c_contiguous(V.create([2, 1, 3], [3, 99, 1]))  # an extent-1 axis: any stride
    assert V.is_c_contiguous(V.create([]))


def test_strides_opt_and_can_get_strides() -> None:
    plain = V.create([2, 3], [1, 2], 3)
    assert V.strides_opt(plain) == (1, 2) and V.can_get_strides(plain)
    assert V.is_materializable(plain)
    masked = V.pad(plain, [(1, 0), (0, 0)])
    assert V.strides_opt(masked) is None and not V.can_get_strides(masked)
    assert not V.is_materializable(masked)
    # strides_opt simplifies: a hand-made View whose mask covers everything has strides
    assert V.strides_opt(View((2,), (1,), 0, ((0, 2),))) == (1,)


def test_is_valid() -> None:
    view = V.create([4, 3], mask=[(1, 3), (0, 2)])
    assert V.is_valid(view, [1, 0]) and V.is_valid(view, [2, 1])
    assert not V.is_valid(view, [0, 0]) and not V.is_valid(view, [3, 1])
    assert not V.is_valid(view, [1, 2])
    assert not V.is_valid(view, [1])            # "the indices array length mismatches"
    assert V.is_valid(V.create([2]), [1])       # "true if the view has no mask"
    assert not V.is_valid(V.create([2]), [2])   # "false if indices are out of bounds"


# --------------------------------------------------------------------------- reshape


def test_reshape_returns_the_same_view_for_the_same_shape() -> None:
    masked = V.pad(V.create([2]), [(1, 1)])
    assert V.reshape(masked, [4]) is masked


def test_reshape_size_mismatch_is_an_invalid_argument() -> None:
    with pytest.raises(InvalidArgument):
        V.reshape(V.create([2, 3]), [5])


def test_reshape_to_or_from_zero_size_is_allowed() -> None:
    # "unless either the original or new shape is zero-size"
    assert V.reshape(V.create([0, 3], offset=3), [3, 0]) == View((3, 0), (0, 1), 0, None)
    assert V.reshape(V.create([2, 3], [1, 2], 4), [0]) == View((0,), (1,), 0, None)
    assert V.reshape(V.create([0, 4]), [5]) == V.create([5])


def test_reshape_of_a_masked_view_fails() -> None:
    with pytest.raises(ViewFailure):
        V.reshape(V.pad(V.create([2, 3]), [(1, 0), (0, 0)]), [9])


def test_reshape_of_c_contiguous_views_always_succeeds() -> None:
    assert V.reshape(V.create([2, 3, 4]), [4, 6]) == V.create([4, 6])
    assert V.reshape(V.create([6]), [1, 6, 1]).shape == (1, 6, 1)


def test_reshape_adds_and_removes_singletons_of_a_transposed_view() -> None:
    transposed = V.permute(V.create([3, 4]), [1, 0])      # strides (1, 4)
    assert V.reshape(transposed, [1, 4, 1, 3]) == View((1, 4, 1, 3), (0, 1, 0, 4), 0, None)
    assert V.reshape(V.reshape(transposed, [1, 4, 1, 3]), [4, 3]) == transposed


def test_reshape_merges_contiguous_dimensions() -> None:
    # "Combining contiguous dimensions (e.g., |2; 3; 4| to |6; 4|)" on a shrunk (offset) view
    view = V.shrink(V.create([4, 3, 4]), [(1, 3), (0, 3), (0, 4)])
    assert V.reshape(view, [6, 4]) == View((6, 4), (4, 1), 12, None)
    flipped = V.flip(V.create([2, 3, 4]), [True, True, True])
    assert V.reshape(flipped, [6, 4]) == View((6, 4), (-4, -1), 23, None)


def test_reshape_splits_dimensions() -> None:
    # "Dividing dimensions (e.g., |6| to |2; 3|)", here of a view stepping by 2
    assert V.reshape(V.create([6], [2], 1), [2, 3]) == View((2, 3), (6, 2), 1, None)


def test_reshape_of_all_zero_strides_is_free() -> None:
    broadcast = V.expand(V.create([1, 1]), [3, 4])
    assert V.reshape(broadcast, [2, 6]) == View((2, 6), (0, 0), 0, None)


def test_reshape_of_a_transposed_view_to_merged_axes_fails() -> None:
    # "Non-contiguous views (like transposed tensors) cannot reshape without data reordering.
    # The error message indicates expected versus actual strides and suggests calling
    # contiguous() first."
    with pytest.raises(ViewFailure, match=r"strides \[1, 2\] \(expected \[3, 1\]\).*"
                                          r"contiguous\(\)"):
        V.reshape(V.permute(V.create([3, 2]), [1, 0]), [6])


# --------------------------------------------------------------------------- expand, permute


def test_expand() -> None:
    view = V.expand(V.create([1, 3], [5, 2], 1), [4, 3])
    assert view == View((4, 3), (0, 2), 1, None)
    with pytest.raises(InvalidArgument):
        V.expand(V.create([2, 3]), [4, 3])     # "a non-singleton dimension"
    with pytest.raises(InvalidArgument):
        V.expand(V.create([1, 3]), [3])
    # "Zero-size tensors create a new zero-size view with the new shape."
    assert V.expand(V.create([1, 0], [9, 9]), [5, 0]) == V.create([5, 0])


def test_expand_keeps_a_singleton_mask() -> None:
    padded = V.pad(V.create([1, 2]), [(0, 0), (1, 0)])          # valid along axis 0
    assert V.expand(padded, [3, 3]).mask == ((0, 3), (1, 3))
    empty = V.shrink(V.pad(V.create([1, 2]), [(1, 0), (0, 0)]), [(0, 1), (0, 2)])
    assert empty.mask == ((0, 0), (0, 2))                       # nothing valid
    assert V.expand(empty, [3, 2]).mask == ((0, 0), (0, 2))


def test_permute() -> None:
    view = V.create([2, 3, 4], mask=[(0, 1), (0, 3), (1, 4)])
    permuted = V.permute(view, [2, 0, 1])
    assert permuted.shape == (4, 2, 3) and permuted.strides == (1, 12, 4)
    assert permuted.mask == ((1, 4), (0, 1), (0, 3))
    assert V.permute(V.create([2, 3]), [1, 0]).strides == (1, 3)  # transposes
    for wrong in ([0, 0, 1], [0, 1], [0, 1, 3], [-1, 0, 1]):
        with pytest.raises(InvalidArgument):
            V.permute(view, wrong)


# --------------------------------------------------------------------------- shrink, pad, flip


def test_shrink() -> None:
    view = V.create([4, 5])
    assert V.shrink(view, [(0, 4), (0, 5)]) is view
    assert V.shrink(view, [(1, 3), (2, 4)]) == View((2, 2), (5, 1), 7, None)
    for wrong in ([(1, 1), (0, 5)], [(3, 2), (0, 5)], [(0, 5), (0, 5)], [(-1, 2), (0, 5)],
                  [(0, 4)]):
        with pytest.raises(InvalidArgument):
            V.shrink(view, wrong)


def test_shrink_cuts_a_mask() -> None:
    padded = V.pad(V.create([3]), [(2, 2)])                     # mask (2, 5) of 7
    assert V.shrink(padded, [(1, 4)]).mask == ((1, 3),)
    assert V.shrink(padded, [(2, 5)]) == V.create([3])          # back to the data: no mask
    assert V.shrink(padded, [(0, 2)]).mask == ((0, 0),)         # padding only


def test_pad() -> None:
    view = V.create([2, 3], offset=10)
    assert V.pad(view, [(0, 0), (0, 0)]) is view
    padded = V.pad(view, [(1, 2), (3, 0)])
    # "the offset decreases by the sum of before_i * stride_i"
    assert padded == View((5, 6), (3, 1), 10 - 1 * 3 - 3 * 1, ((1, 3), (3, 6)))
    with pytest.raises(InvalidArgument):
        V.pad(view, [(-1, 0), (0, 0)])
    with pytest.raises(InvalidArgument):
        V.pad(view, [(1, 0)])
    assert V.pad(padded, [(1, 0), (0, 1)]).mask == ((2, 4), (3, 6))


def test_flip() -> None:
    view = V.create([2, 3])
    flipped = V.flip(view, [False, True])
    assert flipped == View((2, 3), (3, -1), 2, None)
    assert V.flip(flipped, [False, True]) == view
    # "the mask bounds are also flipped"
    padded = V.pad(V.create([3]), [(1, 2)])                     # mask (1, 4) of 6
    assert V.flip(padded, [True]).mask == ((2, 5),)
    with pytest.raises(InvalidArgument):
        V.flip(view, [True])


# --------------------------------------------------------------------------- buffers


def test_materialize_reads_padding_as_zero() -> None:
    buffer = np.array([1.5, -2.0, 3.0])
    padded = V.pad(V.create([3]), [(2, 1)])
    assert padded.offset == -2                       # the virtual prefix: never read
    np.testing.assert_array_equal(V.materialize(buffer, padded), [0, 0, 1.5, -2, 3, 0])
    assert V.as_numpy_view(buffer, padded) is None
    flags = np.array([True, True])
    assert V.materialize(flags, V.pad(V.create([2]), [(1, 0)])).tolist() == [False, True, True]


def test_materialize_and_as_numpy_view_check_the_buffer_bounds() -> None:
    with pytest.raises(ValueError):
        V.materialize(np.zeros(5), V.create([2, 3]))
    with pytest.raises(ValueError):
        V.as_numpy_view(np.zeros(6), V.create([2, 3], offset=1))
    with pytest.raises(ValueError):
        V.materialize(np.zeros((2, 3)), V.create([2, 3]))


def test_as_numpy_view_is_a_real_strided_view() -> None:
    buffer = np.arange(12, dtype=np.int64)
    view = V.flip(V.permute(V.create([3, 4]), [1, 0]), [True, False])
    array = V.as_numpy_view(buffer, view)
    assert array.strides == (-8, 32) and np.shares_memory(array, buffer)
    assert not array.flags.writeable
    np.testing.assert_array_equal(array, buffer.reshape(3, 4).T[::-1])


def test_zero_size_views_read_an_empty_buffer() -> None:
    view = V.create([0, 3], [5, 1], 4)
    for array in (V.materialize(np.zeros(0), view), V.as_numpy_view(np.zeros(0), view)):
        assert array.shape == (0, 3)


def test_json_round_trip() -> None:
    view = V.pad(V.flip(V.create([2, 3]), [True, False]), [(0, 1), (2, 0)])
    assert V.from_json(view.as_json()) == view
    for wrong in ([], {"shape": [2], "strides": 1}, {"shape": [2], "strides": [1], "mask": 3},
                  {"shape": [2], "strides": [1], "offset": 1.5},
                  {"shape": [2], "strides": [1, 1]}, {"shape": [True], "strides": [1]}):
        with pytest.raises(InvalidArgument):
            V.from_json(wrong)


# --------------------------------------------------------------------------- properties

SHAPES = st.lists(st.integers(0, 4), min_size=0, max_size=4)


@st.composite
def strided(draw: st.DrawFn) -> tuple[View, np.ndarray]:
    """A view with arbitrary strides (negative and zero too) and the smallest buffer it
    fits in."""
    shape = draw(SHAPES)
    strides = [draw(st.integers(-6, 6)) for _ in shape]
    low = sum(min(0, (n - 1) * s) for n, s in zip(shape, strides) if n)
    high = sum(max(0, (n - 1) * s) for n, s in zip(shape, strides) if n)
    offset = -low + draw(st.integers(0, 3))
    size = offset + high + 1 + draw(st.integers(0, 3))
    buffer = np.arange(size, dtype=np.float64) * 1.5 - 7
    return V.create(shape, strides, offset), buffer


def _by_hand(buffer: np.ndarray, view: View) -> np.ndarray:
    """Element by element from the seed's formula offset + Σ i·s (the padding value 0)."""
    result = np.zeros(view.shape, buffer.dtype)
    for index in np.ndindex(*view.shape):
        if view.mask is None or all(b <= i < e for i, (b, e) in zip(index, view.mask)):
            result[index] = buffer[view.offset + sum(i * s for i, s in
                                                     zip(index, view.strides))]
    return result


@settings(max_examples=150, deadline=None)
@given(strided())
def test_as_numpy_view_agrees_with_numpy(drawn: tuple[View, np.ndarray]) -> None:
    view, buffer = drawn
    itemsize = buffer.itemsize
    array = V.as_numpy_view(buffer, view)
    assert array.shape == view.shape
    assert array.strides == tuple(s * itemsize for s in view.strides)
    expected = _by_hand(buffer, view)
    np.testing.assert_array_equal(array, expected)
    np.testing.assert_array_equal(V.materialize(buffer, view), expected)
    if view.numel:
        assert np.shares_memory(array, buffer)
        np.testing.assert_array_equal(array, as_strided(
            buffer[view.offset:], view.shape, tuple(s * itemsize for s in view.strides)))
        # NumPy's own constructor checks the bounds and handles negative strides
        built = np.ndarray(view.shape, buffer.dtype, buffer=buffer,
                           offset=view.offset * itemsize,
                           strides=tuple(s * itemsize for s in view.strides))
        np.testing.assert_array_equal(array, built)
    for index in np.ndindex(*view.shape):
        assert V.is_valid(view, index)


# A chain of view operations applied both to the view and, independently, to a NumPy model:
# the logical array and a bool array saying which elements are valid (not padding).

@st.composite
def operation(draw: st.DrawFn, shape: tuple[int, ...]) -> tuple[str, Any]:
    kinds = ["permute", "flip", "reshape", "pad", "expand_back"]
    if shape and all(shape):
        kinds.append("shrink")
    if 1 in shape:
        kinds.append("expand")
    kind = draw(st.sampled_from(kinds))
    rank = len(shape)
    if kind == "permute":
        return kind, draw(st.permutations(range(rank)))
    if kind == "flip":
        return kind, [draw(st.booleans()) for _ in shape]
    if kind == "shrink":
        bounds = []
        for n in shape:
            start = draw(st.integers(0, n - 1))
            bounds.append((start, draw(st.integers(start + 1, n))))
        return kind, bounds
    if kind == "pad":
        return kind, [(draw(st.integers(0, 2)), draw(st.integers(0, 2))) for _ in shape]
    if kind == "expand":
        return kind, [draw(st.integers(1, 3)) if n == 1 else n for n in shape]
    if kind == "expand_back":  # a new leading singleton axis, broadcast (reshape + expand)
        return kind, draw(st.integers(1, 3))
    # reshape: a random factorization of the size, with singletons
    size = int(np.prod(shape))
    if size == 0:
        return kind, draw(st.sampled_from([[0], [2, 0], [0, 3, 1]]))
    factors, rest = [], size
    for p in (2, 3, 5, 7):
        while rest % p == 0:
            factors.append(p)
            rest //= p
    factors += [rest] if rest > 1 else []
    factors = draw(st.permutations(factors))
    cuts = sorted(draw(st.sets(st.integers(1, max(1, len(factors) - 1)), max_size=3)))
    new, last = [], 0
    for cut in cuts + [len(factors)]:
        if cut > last:
            new.append(int(np.prod(factors[last:cut])))
            last = cut
    if draw(st.booleans()):
        new.insert(draw(st.integers(0, len(new))), 1)
    return kind, new


def _apply(kind: str, argument: Any, view: View, logical: np.ndarray, valid: np.ndarray,
           buffer: np.ndarray) -> tuple[View, np.ndarray, np.ndarray]:
    if kind == "permute":
        return V.permute(view, argument), logical.transpose(argument), valid.transpose(argument)
    if kind == "flip":
        cut = tuple(slice(None, None, -1) if f else slice(None) for f in argument)
        return V.flip(view, argument), logical[cut], valid[cut]
    if kind == "shrink":
        cut = tuple(slice(b, e) for b, e in argument)
        return V.shrink(view, argument), logical[cut], valid[cut]
    if kind == "pad":
        if not argument:  # rank 0: nothing to pad (np.pad wants a non-empty width)
            return V.pad(view, argument), logical, valid
        width = np.array(argument, dtype=np.int64)
        return (V.pad(view, argument), np.pad(logical, width),
                np.pad(valid, width, constant_values=False))
    if kind == "expand":
        return (V.expand(view, argument), np.broadcast_to(logical, argument),
                np.broadcast_to(valid, argument))
    if kind == "expand_back":
        shape = (argument,) + logical.shape
        lifted = V.reshape(view, (1,) + view.shape) if view.mask is None else None
        if lifted is None:
            return view, logical, valid
        return (V.expand(lifted, shape), np.broadcast_to(logical, shape),
                np.broadcast_to(valid, shape))
    # reshape
    new = tuple(argument)
    if view.mask is not None and new != view.shape:
        with pytest.raises(ViewFailure):
            V.reshape(view, new)
        return view, logical, valid
    strided_array = V.as_numpy_view(buffer, view) if view.mask is None else None
    try:
        reshaped = V.reshape(view, new)
    except ViewFailure:
        # the seed's "works only where strides allow": NumPy must need a copy too
        with pytest.raises(ValueError):
            np.reshape(strided_array, new, copy=False)
        return view, logical, valid
    if strided_array is not None and view.numel:
        np.reshape(strided_array, new, copy=False)  # NumPy agrees that no copy is needed
    return reshaped, logical.reshape(new), valid.reshape(new)


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_operation_chains_agree_with_numpy(data: st.DataObject) -> None:
    shape = tuple(data.draw(SHAPES))
    size = int(np.prod(shape))
    buffer = np.arange(1, size + 1, dtype=np.float64)
    view = V.create(shape)
    logical = buffer.reshape(shape)
    valid = np.ones(shape, dtype=bool)
    for _ in range(data.draw(st.integers(1, 5))):
        kind, argument = data.draw(operation(view.shape))
        view, logical, valid = _apply(kind, argument, view, logical, valid, buffer)
        assert view.shape == logical.shape
        if view.numel == 0:
            assert view.offset == 0 and view.mask is None
            continue
        expected = np.where(valid, logical, 0.0)
        np.testing.assert_array_equal(V.materialize(buffer, view), expected)
        np.testing.assert_array_equal(V.valid_elements(view), valid)
        array = V.as_numpy_view(buffer, view)
        if valid.all():
            assert view.mask is None          # full masks are removed
            np.testing.assert_array_equal(array, logical)
            assert np.shares_memory(array, buffer)
        else:
            assert array is None and V.strides_opt(view) is None
        for index in np.ndindex(*view.shape):
            assert V.is_valid(view, index) == bool(valid[index])
            if valid[index]:
                assert buffer[V.linear_index(view, index)] == logical[index]
