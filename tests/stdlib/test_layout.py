"""Module `layout` (spec §4.1, and tensor, space_to_depth, depth_to_space): every operator
against NumPy written here."""

from __future__ import annotations

import numpy as np
import pytest

from refinterp.core.diagnostics import Diagnostic

from .conftest import run


# ------------------------------------------------------------------ creation


def test_constant_and_tensor(rng):
    for name in ("layout.constant", "layout.tensor"):
        out = run(name, {}, {"shape": [2, 3], "value": 1.5})["output"]
        assert np.array_equal(out, np.full((2, 3), 1.5))
        values = list(range(6))
        out = run(name, {}, {"shape": [3, 2], "value": values})["output"]
        assert np.array_equal(out, np.arange(6).reshape(3, 2))
    assert np.array_equal(run("layout.tensor", {}, {"value": 42.0})["output"], np.array(42.0))
    with pytest.raises(Diagnostic, match="must have 6 items"):
        run("layout.constant", {}, {"shape": [2, 3], "value": [1.0, 2.0]})


def test_uniform(rng):
    out = run("layout.uniform", {"value": np.array(3.5)}, {"shape": [2, 3]})["output"]
    assert np.array_equal(out, np.full((2, 3), 3.5))
    out = run("layout.uniform", {"value": np.array(True)}, {"shape": [4]})["output"]
    assert out.dtype == np.bool_ and out.all() and out.shape == (4,)


@pytest.mark.parametrize("first, last, stride", [(0, 5, 1), (1, 8, 3), (5, 0, -2),
                                                 (0.5, 2.0, 0.5)])
def test_range(first, last, stride):
    out = run("layout.range", {}, {"first": first, "last": last, "stride": stride})["output"]
    np.testing.assert_allclose(out, np.arange(first, last, stride))


def test_shape(rng):
    assert run("layout.shape", {"input": np.zeros((2, 3, 4))})["output"].tolist() == [2, 3, 4]
    assert run("layout.shape", {"input": np.zeros((5,), dtype=bool)})["output"].tolist() == [5]


def test_cast():
    x = np.array([1.7, -1.7, 0.0, 2.5])
    assert run("layout.cast", {"x": x}, generics=("int",))["y"].tolist() == [1, -1, 0, 2]
    assert run("layout.cast", {"x": x}, generics=("bool",))["y"].tolist() == \
        [True, True, False, True]
    ints = np.array([0, 3, -2])
    out = run("layout.cast", {"x": ints}, generics=("real",))["y"]
    assert out.dtype == np.float64 and out.tolist() == [0.0, 3.0, -2.0]
    flags = np.array([True, False])
    assert run("layout.cast", {"x": flags}, generics=("int",))["y"].tolist() == [1, 0]


# ------------------------------------------------------------------ views


def test_reshape(rng):
    x = rng.standard_normal((2, 3, 4))
    assert np.array_equal(run("layout.reshape", {"input": x}, {"shape": [6, 4]})["output"],
                          x.reshape(6, 4))
    assert np.array_equal(run("layout.reshape", {"input": x}, {"shape": [-1, 2]})["output"],
                          x.reshape(-1, 2))
    out = run("layout.reshape", {"input": x}, {"axis": 1, "rank": 2, "shape": [2, 6]})["output"]
    assert np.array_equal(out, x.reshape(2, 2, 6))
    with pytest.raises(Diagnostic):
        run("layout.reshape", {"input": x}, {"shape": [5, 5]})


def test_flatten_unflatten(rng):
    x = rng.standard_normal((2, 3, 4))
    assert np.array_equal(run("layout.flatten", {"input": x})["output"], x.reshape(-1))
    assert np.array_equal(run("layout.flatten", {"input": x}, {"axis": 1, "rank": 2})["output"],
                          x.reshape(2, 12))
    out = run("layout.unflatten", {"input": x}, {"axis": 2, "shape": [2, 2]})["output"]
    assert np.array_equal(out, x.reshape(2, 3, 2, 2))
    out = run("layout.unflatten", {"input": x}, {"axis": -3, "shape": [1, 2]})["output"]
    assert np.array_equal(out, x.reshape(1, 2, 3, 4))


def test_squeeze_unsqueeze(rng):
    x = rng.standard_normal((2, 1, 3, 1))
    assert np.array_equal(run("layout.squeeze", {"input": x}, {"axes": [1]})["output"],
                          x.reshape(2, 3, 1))
    assert np.array_equal(run("layout.squeeze", {"input": x}, {"axes": [-1, 1]})["output"],
                          x.reshape(2, 3))
    y = rng.standard_normal((2, 3))
    assert np.array_equal(run("layout.unsqueeze", {"input": y}, {"axes": [0]})["output"],
                          y[None])
    assert np.array_equal(run("layout.unsqueeze", {"input": y}, {"axes": [1, 3]})["output"],
                          y[:, None, :, None])
    with pytest.raises(Diagnostic):
        run("layout.squeeze", {"input": x}, {"axes": [0]})


# ------------------------------------------------------------------ joining and splitting


def test_concat(rng):
    a, b = rng.standard_normal((2, 3)), rng.standard_normal((2, 5))
    assert np.array_equal(run("layout.concat", {"inputs": [a, b]}, {"axis": 1})["output"],
                          np.concatenate([a, b], 1))
    c = rng.standard_normal((1, 3))
    assert np.array_equal(run("layout.concat", {"inputs": [a, c, a]}, {"axis": -2})["output"],
                          np.concatenate([a, c, a], 0))


def test_split(rng):
    x = rng.standard_normal((2, 6))
    out = run("layout.split", {"input": x}, {"axis": 1, "count": 3})["outputs"]
    assert all(np.array_equal(o, e) for o, e in zip(out, np.split(x, 3, axis=1)))
    out = run("layout.split", {"input": x}, {"axis": -1, "sizes": [1, 5]})["outputs"]
    assert [o.shape for o in out] == [(2, 1), (2, 5)]
    assert np.array_equal(out[0], x[:, :1]) and np.array_equal(out[1], x[:, 1:])


def test_stack_unstack(rng):
    xs = [rng.standard_normal((2, 3)) for _ in range(3)]
    assert np.array_equal(run("layout.stack", {"inputs": xs}, {"axis": 0})["output"],
                          np.stack(xs, 0))
    assert np.array_equal(run("layout.stack", {"inputs": xs}, {"axis": 2})["output"],
                          np.stack(xs, 2))
    x = rng.standard_normal((2, 3, 4))
    out = run("layout.unstack", {"input": x}, {"axis": 1})["outputs"]
    assert len(out) == 3 and all(np.array_equal(o, x[:, i]) for i, o in enumerate(out))
    out = run("layout.unstack", {"input": x}, {"axis": -1, "squeeze": False})["outputs"]
    assert all(np.array_equal(o, x[..., i:i + 1]) for i, o in enumerate(out))


# ------------------------------------------------------------------ expanding and shrinking


def test_tile(rng):
    x = rng.standard_normal((2, 3))
    assert np.array_equal(run("layout.tile", {"input": x}, {"repeats": [2, 3]})["output"],
                          np.tile(x, (2, 3)))
    assert np.array_equal(run("layout.tile", {"input": x}, {"axes": [1],
                                                            "repeats": [2]})["output"],
                          np.tile(x, (1, 2)))


def test_broadcast(rng):
    x = rng.standard_normal((2, 1, 3))
    assert np.array_equal(run("layout.broadcast", {"input": x}, {"axes": [1],
                                                                 "shape": [4]})["output"],
                          np.broadcast_to(x, (2, 4, 3)))
    y = rng.standard_normal((1, 1))
    assert np.array_equal(run("layout.broadcast", {"input": y}, {"shape": [3, 2]})["output"],
                          np.broadcast_to(y, (3, 2)))
    with pytest.raises(Diagnostic):
        run("layout.broadcast", {"input": x}, {"axes": [0], "shape": [4]})


def test_slice(rng):
    x = rng.standard_normal((4, 6))
    out = run("layout.slice", {"input": x}, {"axes": [1], "begin": [1], "end": [5]})["output"]
    assert np.array_equal(out, x[:, 1:5])
    out = run("layout.slice", {"input": x}, {"begin": [0, 1], "end": [4, 6],
                                             "stride": [2, 2]})["output"]
    assert np.array_equal(out, x[0:4:2, 1:6:2])
    # spec: negative positions count from the end (end clamped to the extent)
    out = run("layout.slice", {"input": x}, {"axes": [1], "begin": [1], "end": [-1]})["output"]
    assert np.array_equal(out, x[:, 1:-1])
    out = run("layout.slice", {"input": x}, {"axes": [0], "begin": [3], "end": [-5],
                                             "stride": [-1]})["output"]
    assert np.array_equal(out, x[3::-1])


@pytest.mark.parametrize("method, numpy_mode", [("CONSTANT", "constant"),
                                                ("REFLECT", "reflect"),
                                                ("REPLICATE", "edge"),
                                                ("SYMMETRIC", "symmetric")])
def test_pad(method, numpy_mode, rng):
    x = rng.standard_normal((3, 4))
    out = run("layout.pad", {"input": x}, {"padding": [1, 2, 2, 1], "method": method})["output"]
    assert np.array_equal(out, np.pad(x, ((1, 2), (2, 1)), mode=numpy_mode))
    out = run("layout.pad", {"input": x}, {"axes": [-1], "padding": [0, 2],
                                           "method": method})["output"]
    assert np.array_equal(out, np.pad(x, ((0, 0), (0, 2)), mode=numpy_mode))


def test_pad_with_a_value(rng):
    x = rng.standard_normal((2, 2))
    out = run("layout.pad", {"input": x, "value": np.array(7.0)}, {"padding": [1, 0, 0, 1]})
    assert np.array_equal(out["output"], np.pad(x, ((1, 0), (0, 1)), constant_values=7.0))


# ------------------------------------------------------------------ reordering


def test_transpose(rng):
    x = rng.standard_normal((2, 3, 4))
    assert np.array_equal(run("layout.transpose", {"input": x})["output"], x.transpose())
    assert np.array_equal(run("layout.transpose", {"input": x}, {"perm": [1, 2, 0]})["output"],
                          x.transpose(1, 2, 0))
    # perm names absolute axes from `axis` on
    assert np.array_equal(run("layout.transpose", {"input": x}, {"axis": 1,
                                                                 "perm": [2, 1]})["output"],
                          x.transpose(0, 2, 1))


def space_to_batch_spec(x: np.ndarray, blocks: list[int]) -> np.ndarray:
    """Spec §4.1.5: each spatial axis s splits as [block, s / block] (block index major),
    the block axes move in front of the batch: output batch = block multi-index * b + batch."""
    b, c, *spatial = x.shape
    shape = [b, c] + [v for s, k in zip(spatial, blocks) for v in (k, s // k)]
    y = x.reshape(shape)
    d = len(blocks)
    perm = list(range(2, 2 * d + 2, 2)) + [0, 1] + list(range(3, 2 * d + 2, 2))
    y = y.transpose(perm)
    return y.reshape(-1, c, *[s // k for s, k in zip(spatial, blocks)])


def test_space_to_batch_and_back(rng):
    x = rng.standard_normal((2, 3, 4, 6))
    out = run("layout.space_to_batch", {"input": x}, {"block_size": [2, 3]})["output"]
    assert np.array_equal(out, space_to_batch_spec(x, [2, 3]))
    back = run("layout.batch_to_space", {"input": out}, {"block_size": [2, 3]})["output"]
    assert np.array_equal(back, x)
    y = rng.standard_normal((1, 2, 6))
    out = run("layout.space_to_batch", {"input": y}, {"block_size": [3]})["output"]
    assert np.array_equal(out, space_to_batch_spec(y, [3]))
    assert np.array_equal(run("layout.batch_to_space", {"input": out},
                              {"block_size": [3]})["output"], y)


def depth_reference(x: np.ndarray, blocks: int, blocks_first: bool, nxc: bool) -> np.ndarray:
    """space_to_depth of a 2-D image by loops: output channel (bh * B + bw) * C + c
    (blocks first) or c * B * B + bh * B + bw."""
    if nxc:
        x = np.moveaxis(x, -1, 1)
    n, c, h, w = x.shape
    out = np.zeros((n, c * blocks * blocks, h // blocks, w // blocks), x.dtype)
    for bh in range(blocks):
        for bw in range(blocks):
            for ch in range(c):
                k = bh * blocks + bw
                o = k * c + ch if blocks_first else ch * blocks * blocks + k
                out[:, o] = x[:, ch, bh::blocks, bw::blocks]
    return np.moveaxis(out, 1, -1) if nxc else out


@pytest.mark.parametrize("blocks_first", [True, False])
@pytest.mark.parametrize("data_format", ["NCX", "NXC"])
def test_space_to_depth_and_depth_to_space(blocks_first, data_format, rng):
    x = rng.standard_normal((2, 3, 4, 6) if data_format == "NCX" else (2, 4, 6, 3))
    attributes = {"block_size": [2, 2], "blocks_first": blocks_first,
                  "data_format": data_format}
    out = run("layout.space_to_depth", {"input": x}, attributes)["output"]
    assert np.array_equal(out, depth_reference(x, 2, blocks_first, data_format == "NXC"))
    back = run("layout.depth_to_space", {"input": out}, attributes)["output"]
    assert np.array_equal(back, x)


def test_space_to_depth_checks():
    with pytest.raises(Diagnostic, match="divisible"):
        run("layout.space_to_depth", {"input": np.zeros((1, 1, 3, 4))}, {"block_size": [2, 2]})
    with pytest.raises(Diagnostic, match="data_format"):
        run("layout.depth_to_space", {"input": np.zeros((1, 4, 1, 1))},
            {"block_size": [2, 2], "data_format": "XCN"})


def test_shuffle(rng):
    x = rng.standard_normal((2, 6, 3))
    out = run("layout.shuffle", {"input": x}, {"axis": 1, "groups": 2})["output"]
    assert np.array_equal(out, x.reshape(2, 2, 3, 3).transpose(0, 2, 1, 3).reshape(2, 6, 3))
    y = rng.standard_normal((4, 6))
    out = run("layout.shuffle", {"input": y}, {"axis": -1, "groups": 3})["output"]
    assert np.array_equal(out, y.reshape(4, 3, 2).transpose(0, 2, 1).reshape(4, 6))


# ------------------------------------------------------------------ indexing


def test_nonzero(rng):
    x = np.array([[0.0, 1.0, np.nan], [-0.0, 2.0, 0.0]])
    assert np.array_equal(run("layout.nonzero", {"input": x})["index"], np.array(np.nonzero(x)))
    b = rng.random((2, 3, 4)) < 0.3
    assert np.array_equal(run("layout.nonzero", {"input": b})["index"], np.array(np.nonzero(b)))
    ints = np.zeros(5, dtype=np.int64)
    assert run("layout.nonzero", {"input": ints})["index"].shape == (1, 0)


def test_gather(rng):
    x = rng.standard_normal((2, 3, 4))
    index = np.array([2, 0, 2])
    assert np.array_equal(run("layout.gather", {"data": x, "index": index}, {"axis": 1})["output"],
                          np.take(x, index, axis=1))
    index2 = np.array([[3, 1], [0, 0]])
    assert np.array_equal(run("layout.gather", {"data": x, "index": index2},
                              {"axis": -1})["output"], np.take(x, index2, axis=-1))


def gather_nd_reference(data, indices, batch_dims):
    b = data.shape[:batch_dims]
    out = []
    for bi in np.ndindex(*b):
        for zi in np.ndindex(*indices.shape[batch_dims:-1]):
            out.append(data[bi + tuple(indices[bi + zi])])
    return np.array(out).reshape(indices.shape[:-1] + data.shape[batch_dims + indices.shape[-1]:])


def test_gather_nd(rng):
    x = rng.standard_normal((2, 3, 4))
    indices = np.array([[0, 1], [1, 2], [1, 0]])
    assert np.array_equal(run("layout.gather_nd", {"data": x, "indices": indices})["output"],
                          gather_nd_reference(x, indices, 0))
    batched = np.array([[[2], [0]], [[1], [1]]])
    out = run("layout.gather_nd", {"data": x, "indices": batched}, {"batch_dims": 1})["output"]
    assert np.array_equal(out, gather_nd_reference(x, batched, 1))


def test_scatter(rng):
    x = rng.standard_normal((2, 5, 3))
    indices = np.array([[[4, 0, 1], [1, 2, 3]], [[0, 0, 0], [2, 2, 2]]])
    updates = rng.standard_normal((2, 2, 3))
    expected = x.copy()
    np.put_along_axis(expected, indices, updates, axis=1)
    out = run("layout.scatter", {"data": x, "indices": indices, "updates": updates},
              {"axis": 1})["output"]
    assert np.array_equal(out, expected)
    ints = rng.integers(0, 9, (4,))
    out = run("layout.scatter", {"data": ints, "indices": np.array([3, 0]),
                                 "updates": np.array([-1, -2])}, {"axis": 0})["output"]
    assert out.tolist() == [-2, *ints[1:3].tolist(), -1]


def test_scatter_nd(rng):
    x = rng.standard_normal((3, 4))
    indices = np.array([[0, 1], [2, 3]])
    updates = np.array([10.0, 20.0])
    expected = x.copy()
    expected[0, 1], expected[2, 3] = 10.0, 20.0
    out = run("layout.scatter_nd", {"data": x, "indices": indices, "updates": updates})
    assert np.array_equal(out["output"], expected)
    rows = np.array([[2], [0]])
    row_updates = rng.standard_normal((2, 4))
    expected = x.copy()
    expected[2], expected[0] = row_updates[0], row_updates[1]
    out = run("layout.scatter_nd", {"data": x, "indices": rows, "updates": row_updates})
    assert np.array_equal(out["output"], expected)


# ------------------------------------------------------------------ repaired defects


def test_reshape_of_an_empty_tensor_to_a_shape_holding_zero():
    """The guard of `input_volume != 0 => input_volume % shape_volume == 0` is false for an empty
    input, so its consequence (0 % 0) is not evaluated; unflatten takes the 0 items."""
    x = np.zeros((0, 4))
    assert run("layout.reshape", {"input": x}, {"shape": [0]})["output"].shape == (0,)
    out = run("layout.reshape", {"input": x}, {"shape": [2, 0, 2]})["output"]
    assert out.shape == np.reshape(x, (2, 0, 2)).shape


def test_unflatten_allows_zero_items_only_for_an_empty_extent():
    out = run("layout.unflatten", {"input": np.zeros((3, 0))}, {"axis": 1, "shape": [0, 5]})
    assert out["output"].shape == (3, 0, 5)
    with pytest.raises(Diagnostic, match="shape items must be positive"):
        run("layout.unflatten", {"input": np.zeros((3, 4))}, {"axis": 1, "shape": [0, 4]})


@pytest.mark.parametrize("axis, shape, expected", [(1, (2, 3, 4), (0, 2, 1)),
                                                   (-2, (2, 3, 4, 5), (0, 1, 3, 2)),
                                                   (0, (2, 3, 4), (2, 1, 0))])
def test_transpose_default_perm_reverses_the_axes_from_axis(rng, axis, shape, expected):
    x = rng.standard_normal(shape)
    out = run("layout.transpose", {"input": x}, {"axis": axis})["output"]
    np.testing.assert_array_equal(out, np.transpose(x, expected))


@pytest.mark.parametrize("axis", [-1, -2])
def test_scatter_with_a_negative_axis(rng, axis):
    data = rng.standard_normal((2, 3))
    indices = np.array([[1, 0, 1]]) if axis == -2 else np.array([[0], [2]])
    updates = rng.standard_normal(indices.shape)
    expected = data.copy()
    np.put_along_axis(expected, indices, updates, axis=axis)
    out = run("layout.scatter", {"data": data, "indices": indices, "updates": updates},
              {"axis": axis})["output"]
    np.testing.assert_array_equal(out, expected)


def test_split_axis_below_minus_rank_is_the_axis_diagnostic():
    with pytest.raises(Diagnostic, match="'axis' must be between -input.rank") as error:
        run("layout.split", {"input": np.zeros(4)}, {"axis": -2, "count": 2})
    assert error.value.code == "E0307"
