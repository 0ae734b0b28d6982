"""Spec §4.5 image operators (and the Khronos-era grid_sample), each compared with an
independent NumPy implementation written here."""

from __future__ import annotations

import numpy as np
import pytest

from refinterp.api import run_operator
from refinterp.core.diagnostics import Diagnostic

from testsupport.image_references import keys_kernel, ref_grid_sample
from .conftest import run

# ----------------------------------------------------------------------------- NumPy references


def _axes(axes: list[int], rank: int) -> list[int]:
    return [a % rank for a in axes]


def ref_nearest_downsample(x: np.ndarray, axes: list[int], factor: list[int]) -> np.ndarray:
    index = [slice(None)] * x.ndim
    for a, f in zip(_axes(axes, x.ndim), factor):
        index[a] = slice(None, None, f)
    return x[tuple(index)]


def ref_nearest_upsample(x: np.ndarray, axes: list[int], factor: list[int]) -> np.ndarray:
    for a, f in zip(_axes(axes, x.ndim), factor):
        x = np.repeat(x, f, axis=a)
    return x


def ref_area_downsample(x: np.ndarray, axes: list[int], factor: list[int]) -> np.ndarray:
    for a, f in zip(_axes(axes, x.ndim), factor):
        shape = x.shape[:a] + (x.shape[a] // f, f) + x.shape[a + 1:]
        x = x.reshape(shape).mean(axis=a + 1)
    return x


def _linear_along(x: np.ndarray, axis: int, coords: np.ndarray, replicate: bool) -> np.ndarray:
    """Linear interpolation at real positions `coords` along `axis`; beyond the border the
    edge value (replicate) or zero."""
    n = x.shape[axis]
    low = np.floor(coords).astype(int)
    weight = coords - low

    def tap(i: np.ndarray) -> np.ndarray:
        taken = np.take(x, np.clip(i, 0, n - 1), axis=axis)
        if replicate:
            return taken
        shape = [1] * x.ndim
        shape[axis] = len(i)
        return taken * ((i >= 0) & (i < n)).reshape(shape)

    shape = [1] * x.ndim
    shape[axis] = len(coords)
    weight = weight.reshape(shape)
    return (1.0 - weight) * tap(low) + weight * tap(low + 1)


def ref_linear_upsample(x: np.ndarray, axes: list[int], factor: list[int], symmetric: bool,
                        replicate: bool) -> np.ndarray:
    for a, f in zip(_axes(axes, x.ndim), factor):
        o = np.arange(x.shape[a] * f, dtype=float)
        coords = (o + 0.5) / f - 0.5 if symmetric else o / f
        x = _linear_along(x, a, coords, replicate)
    return x


def resize_coords(n: int, size: int, transform: str) -> np.ndarray:
    """Input positions of the output cells (the resize family's coordinate transforms)."""
    o = np.arange(size, dtype=float)
    if transform == "ALIGNED":
        return o * (0.0 if size <= 1 else (n - 1) / (size - 1))
    scale = n / size
    return o * scale if transform == "ASYMMETRIC" else o * scale + (0.5 * scale - 0.5)


def ref_nearest_resize(x: np.ndarray, axes: list[int], size: list[int], transform: str,
                       rounding: str) -> np.ndarray:
    for a, m in zip(_axes(axes, x.ndim), size):
        r = resize_coords(x.shape[a], m, transform)
        low = np.floor(r)
        tie = (r - low) == 0.5
        nearest = np.where(r - low > 0.5, low + 1, low)
        chosen = {"FLOOR": low, "CEIL": np.ceil(r),
                  "ROUND_PREFER_FLOOR": np.where(tie, low, nearest),
                  "ROUND_PREFER_CEIL": np.where(tie, low + 1, nearest)}[rounding]
        x = np.take(x, np.clip(chosen.astype(int), 0, x.shape[a] - 1), axis=a)
    return x


def ref_linear_resize(x: np.ndarray, axes: list[int], size: list[int],
                      transform: str) -> np.ndarray:
    for a, m in zip(_axes(axes, x.ndim), size):
        x = _linear_along(x, a, resize_coords(x.shape[a], m, transform), replicate=True)
    return x


# ----------------------------------------------------------------------------- up/down-sampling


@pytest.mark.parametrize("axes,factor,shape", [
    (None, [2, 3], (4, 6)),
    ([2, -1], [2, 2], (1, 2, 4, 6)),
    ([1], [3], (2, 6, 2)),
])
def test_nearest_downsample(rng, axes, factor, shape):
    x = rng.standard_normal(shape)
    attrs = {"factor": factor} | ({} if axes is None else {"axes": axes})
    out = run("image.nearest_downsample", {"input": x}, attrs)["output"]
    np.testing.assert_array_equal(out, ref_nearest_downsample(x, axes or [0, 1], factor))


@pytest.mark.parametrize("axes,factor,shape", [
    (None, [2, 3], (2, 3)),
    ([2, -1], [2, 3], (1, 2, 2, 3)),
])
def test_nearest_upsample(rng, axes, factor, shape):
    x = rng.standard_normal(shape)
    attrs = {"factor": factor} | ({} if axes is None else {"axes": axes})
    out = run("image.nearest_upsample", {"input": x}, attrs)["output"]
    np.testing.assert_array_equal(out, ref_nearest_upsample(x, axes or [0, 1], factor))


@pytest.mark.parametrize("axes,factor,shape", [
    (None, [2, 3], (4, 6)),
    ([2, -1], [2, 2], (1, 2, 4, 4)),
])
def test_area_downsample(rng, axes, factor, shape):
    # also the regression test for `real(factor * ..)` as an argument of an invocation in
    # @compose (a compile-time cast, not an operator)
    x = rng.standard_normal(shape)
    attrs = {"factor": factor} | ({} if axes is None else {"axes": axes})
    out = run("image.area_downsample", {"input": x}, attrs)["output"]
    np.testing.assert_allclose(out, ref_area_downsample(x, axes or [0, 1], factor), rtol=1e-12)


def test_downsample_rejects_indivisible_shape(rng):
    with pytest.raises(Diagnostic, match="divisible"):
        run("image.nearest_downsample", {"input": rng.standard_normal((5, 4))},
            {"factor": [2, 2]})


@pytest.mark.parametrize("symmetric", [True, False])
@pytest.mark.parametrize("replicate", [True, False])
@pytest.mark.parametrize("factor", [2, 3])
def test_linear_upsample_1d(rng, symmetric, replicate, factor):
    x = rng.standard_normal(5)
    out = run("image.linear_upsample", {"input": x},
              {"factor": [factor], "symmetric": symmetric, "replicate_border": replicate})
    np.testing.assert_allclose(
        out["output"], ref_linear_upsample(x, [0], [factor], symmetric, replicate), atol=1e-12)


def test_linear_upsample_defaults(rng):
    x = rng.standard_normal((3, 2))
    out = run("image.linear_upsample", {"input": x}, {"factor": [2, 4]})["output"]
    np.testing.assert_allclose(out, ref_linear_upsample(x, [0, 1], [2, 4], True, True),
                               atol=1e-12)


@pytest.mark.parametrize("symmetric,replicate", [(True, True), (False, False)])
def test_linear_upsample_2d_on_some_axes(rng, symmetric, replicate):
    x = rng.standard_normal((1, 2, 3, 3))
    attrs = {"axes": [2, -1], "factor": [2, 3], "symmetric": symmetric,
             "replicate_border": replicate}
    out = run("image.linear_upsample", {"input": x}, attrs)["output"]
    expected = ref_linear_upsample(x, [2, 3], [2, 3], symmetric, replicate)
    np.testing.assert_allclose(out, expected, atol=1e-12)


# ----------------------------------------------------------------------------- resize


TRANSFORMS = ["SYMMETRIC", "ASYMMETRIC", "ALIGNED"]
ROUNDINGS = ["FLOOR", "CEIL", "ROUND_PREFER_FLOOR", "ROUND_PREFER_CEIL"]


@pytest.mark.parametrize("transform", TRANSFORMS)
@pytest.mark.parametrize("rounding", ROUNDINGS)
def test_nearest_resize(rng, transform, rounding):
    x = rng.standard_normal((1, 4, 6))
    attrs = {"axes": [1, -1], "size": [7, 4], "coordinate_transform": transform,
             "rounding_method": rounding}
    out = run("image.nearest_resize", {"input": x}, attrs)["output"]
    np.testing.assert_array_equal(out, ref_nearest_resize(x, [1, 2], [7, 4], transform,
                                                          rounding))


def test_nearest_resize_defaults(rng):
    x = rng.standard_normal((3, 4))
    out = run("image.nearest_resize", {"input": x}, {"size": [6, 3]})["output"]
    np.testing.assert_array_equal(
        out, ref_nearest_resize(x, [0, 1], [6, 3], "SYMMETRIC", "ROUND_PREFER_FLOOR"))


@pytest.mark.parametrize("transform", TRANSFORMS)
def test_linear_resize(rng, transform):
    # also the regression test for a real fold (`w * .. * x[...]`) in a @lower formula
    x = rng.standard_normal((1, 4, 5))
    attrs = {"axes": [-2, 2], "size": [7, 3], "coordinate_transform": transform}
    out = run("image.linear_resize", {"input": x}, attrs)["output"]
    np.testing.assert_allclose(out, ref_linear_resize(x, [1, 2], [7, 3], transform), atol=1e-12)


def test_linear_resize_defaults_single_cell(rng):
    x = rng.standard_normal((3, 4))
    out = run("image.linear_resize", {"input": x}, {"size": [1, 6]})["output"]
    np.testing.assert_allclose(out, ref_linear_resize(x, [0, 1], [1, 6], "SYMMETRIC"),
                               atol=1e-12)


def test_real_product_fold_in_a_formula(tmp_path):
    """Regression: `a * .. * x[i]` over a real pack must not start from the int identity."""
    source = tmp_path / "fold.sknd"
    source.write_text("""
operator f {
    @input { x: real[n]; }
    @output { y: real[n]; }
    @lower {
        y[i] += (real(j) + 1.5) * .. * x[i],
            i < n, j < [2, 3];
    }
}
""")
    x = np.array([1.0, -2.0])
    out = run_operator("f", {"x": x}, file=source, engine="scalar")["y"]
    # sum over j0 < 2, j1 < 3 of (j0 + 1.5) * (j1 + 1.5) = (1.5 + 2.5) * (1.5 + 2.5 + 3.5)
    np.testing.assert_allclose(out, x * 30.0)


@pytest.mark.parametrize("mode", ["NEAREST", "LINEAR"])
def test_resize_dispatches_on_mode(rng, mode):
    x = rng.standard_normal((2, 4, 4))
    attrs = {"axes": [1, 2], "size": [6, 2], "mode": mode, "coordinate_transform": "ASYMMETRIC"}
    out = run("image.resize", {"input": x}, attrs)["output"]
    expected = ref_nearest_resize(x, [1, 2], [6, 2], "ASYMMETRIC", "ROUND_PREFER_FLOOR") \
        if mode == "NEAREST" else ref_linear_resize(x, [1, 2], [6, 2], "ASYMMETRIC")
    np.testing.assert_allclose(out, expected, atol=1e-12)


@pytest.mark.parametrize("mode,factor", [("NEAREST", [1.5, 0.5]), ("LINEAR", [2.0, 0.75])])
def test_rescale(rng, mode, factor):
    x = rng.standard_normal((4, 4))
    out = run("image.rescale", {"input": x}, {"factor": factor, "mode": mode})["output"]
    size = [int(np.floor(4 * f + 0.5)) for f in factor]
    expected = ref_nearest_resize(x, [0, 1], size, "SYMMETRIC", "ROUND_PREFER_FLOOR") \
        if mode == "NEAREST" else ref_linear_resize(x, [0, 1], size, "SYMMETRIC")
    np.testing.assert_allclose(out, expected, atol=1e-12)


def test_resize_and_rescale_defaults(rng):
    x = rng.standard_normal((3, 5))
    out = run("image.resize", {"input": x}, {"size": [6, 2]})["output"]
    np.testing.assert_array_equal(
        out, ref_nearest_resize(x, [0, 1], [6, 2], "SYMMETRIC", "ROUND_PREFER_FLOOR"))
    out = run("image.rescale", {"input": x}, {"factor": [2.5, 0.5]})["output"]
    size = [8, 3]  # round half away from zero: 7.5 -> 8, 2.5 -> 3
    np.testing.assert_array_equal(
        out, ref_nearest_resize(x, [0, 1], size, "SYMMETRIC", "ROUND_PREFER_FLOOR"))


@pytest.mark.parametrize("op", ["nearest_resize", "linear_resize", "cubic_resize"])
def test_resizing_an_empty_axis_is_a_diagnostic(op):
    with pytest.raises(Diagnostic, match="empty axis"):
        run(f"image.{op}", {"input": np.zeros((2, 0))}, {"size": [2, 2]})


def test_resize_rejects_unknown_mode(rng):
    with pytest.raises(Diagnostic, match="mode"):
        run("image.resize", {"input": rng.standard_normal((2, 2))},
            {"size": [3, 3], "mode": "AREA"})


# ----------------------------------------------------------------------------- cubic_resize


def ref_cubic_resize(x: np.ndarray, axes: list[int], size: list[int], transform: str,
                     a: float) -> np.ndarray:
    """An explicit interpolation matrix per axis (border taps replicate the edge)."""
    for axis, m in zip(_axes(axes, x.ndim), size):
        n = x.shape[axis]
        matrix = np.zeros((m, n))
        for o, pos in enumerate(resize_coords(n, m, transform)):
            base = int(np.floor(pos))
            for tap in range(base - 1, base + 3):
                matrix[o, min(max(tap, 0), n - 1)] += keys_kernel(pos - tap, a)
        x = np.moveaxis(np.tensordot(matrix, np.moveaxis(x, axis, 0), axes=1), 0, axis)
    return x


@pytest.mark.parametrize("transform", TRANSFORMS)
def test_cubic_resize(rng, transform):
    x = rng.standard_normal((1, 2, 5, 4))
    attrs = {"axes": [2, -1], "size": [8, 3], "coordinate_transform": transform,
             "coeff_a": -0.5}
    out = run("image.cubic_resize", {"input": x}, attrs)["output"]
    np.testing.assert_allclose(out, ref_cubic_resize(x, [2, 3], [8, 3], transform, -0.5),
                               atol=1e-12)


def test_cubic_resize_defaults(rng):
    x = rng.standard_normal((4, 6))
    out = run("image.cubic_resize", {"input": x}, {"size": [7, 2]})["output"]
    np.testing.assert_allclose(out, ref_cubic_resize(x, [0, 1], [7, 2], "SYMMETRIC", -0.75),
                               atol=1e-12)
    same = run("image.cubic_resize", {"input": x}, {"size": [4, 6]})["output"]
    np.testing.assert_allclose(same, x, atol=1e-15)  # integer positions: the input itself


def test_resize_cubic_mode_passes_the_coefficient(rng):
    x = rng.standard_normal((3, 3))
    out = run("image.resize", {"input": x},
              {"size": [5, 4], "mode": "CUBIC", "cubic_coeff_a": -0.6})["output"]
    np.testing.assert_allclose(out, ref_cubic_resize(x, [0, 1], [5, 4], "SYMMETRIC", -0.6),
                               atol=1e-12)


# ----------------------------------------------------------------------------- ROI pooling


def ref_roi_pool(x: np.ndarray, rois: np.ndarray, index: np.ndarray, size: list[int],
                 reduce) -> np.ndarray:
    """Fast R-CNN bins with exact fractions; ROI ends rounded half up (positive here)."""
    from fractions import Fraction
    d = len(size)
    out = np.zeros((len(rois), x.shape[1], *size))
    for m, roi in enumerate(rois):
        ranges = []
        for k in range(d):
            start, end = (int(np.floor(v + 0.5)) for v in (roi[k], roi[d + k]))
            width = Fraction(max(end - start + 1, 1), size[k])
            ranges.append([(int(np.clip(np.floor(p * width) + start, 0, x.shape[2 + k])),
                            int(np.clip(np.ceil((p + 1) * width) + start, 0, x.shape[2 + k])))
                           for p in range(size[k])])
        for cell in np.ndindex(*size):
            window = x[(index[m], slice(None)) +
                       tuple(slice(*ranges[k][cell[k]]) for k in range(d))]
            flat = window.reshape(x.shape[1], -1)
            if flat.shape[1]:
                out[(m, slice(None)) + cell] = reduce(flat, axis=1)
    return out


ROIS_2D = np.array([[0.0, 0.0, 4.0, 5.0], [1.2, 2.0, 3.0, 3.4], [2.0, 4.0, 9.0, 9.0],
                    [3.0, 3.0, 2.0, 1.0]])


@pytest.mark.parametrize("op,reduce", [("max", np.max), ("avg", np.mean)])
@pytest.mark.parametrize("size", [[2, 2], [3, 4]])
def test_roi_pool_2d(rng, op, reduce, size):
    x = rng.standard_normal((2, 3, 5, 6))
    index = np.array([1, 0, 0, 1])
    out = run(f"image.{op}_roi_pool", {"input": x, "rois": ROIS_2D, "index": index},
              {"output_size": size})["output"]
    np.testing.assert_allclose(out, ref_roi_pool(x, ROIS_2D, index, size, reduce), atol=1e-12)


@pytest.mark.parametrize("op,reduce", [("max", np.max), ("avg", np.mean)])
def test_roi_pool_1d(rng, op, reduce):
    x = rng.standard_normal((1, 2, 7))
    rois = np.array([[0.0, 6.0], [2.6, 4.4]])
    index = np.array([0, 0])
    out = run(f"image.{op}_roi_pool", {"input": x, "rois": rois, "index": index},
              {"output_size": [3]})["output"]
    np.testing.assert_allclose(out, ref_roi_pool(x, rois, index, [3], reduce), atol=1e-12)


def test_roi_pool_rejects_bad_index(rng):
    x = rng.standard_normal((1, 1, 4, 4))
    with pytest.raises(Diagnostic, match="index"):
        run("image.max_roi_pool", {"input": x, "rois": ROIS_2D[:1], "index": np.array([1])},
            {"output_size": [2, 2]})


# ----------------------------------------------------------------------------- grid_sample


@pytest.mark.parametrize("mode", ["NEAREST", "LINEAR", "CUBIC"])
@pytest.mark.parametrize("padding", ["ZEROS", "REFLECT", "REPLICATE"])
@pytest.mark.parametrize("aligned", [False, True])
def test_grid_sample_2d(rng, mode, padding, aligned):
    x = rng.standard_normal((2, 2, 3, 4))
    grid = rng.uniform(-1.4, 1.4, size=(2, 2, 3, 2))
    out = run("image.grid_sample", {"input": x, "grid": grid},
              {"mode": mode, "padding": padding, "aligned": aligned})["output"]
    np.testing.assert_allclose(out, ref_grid_sample(x, grid, mode, padding, aligned),
                               atol=1e-12)


def test_grid_sample_defaults_and_far_reflection(rng):
    x = rng.standard_normal((1, 2, 5))
    grid = np.array([[[-3.7], [-1.0], [0.1], [2.9], [5.3]]])  # several reflections
    out = run("image.grid_sample", {"input": x, "grid": grid})["output"]
    np.testing.assert_allclose(out, ref_grid_sample(x, grid, "LINEAR", "ZEROS", False),
                               atol=1e-12)
    out = run("image.grid_sample", {"input": x, "grid": grid}, {"padding": "REFLECT"})["output"]
    np.testing.assert_allclose(out, ref_grid_sample(x, grid, "LINEAR", "REFLECT", False),
                               atol=1e-12)


@pytest.mark.parametrize("mode", ["NEAREST", "LINEAR"])
def test_grid_sample_3d(rng, mode):
    x = rng.standard_normal((1, 1, 2, 3, 2))
    grid = rng.uniform(-1.2, 1.2, size=(1, 2, 1, 2, 3))
    out = run("image.grid_sample", {"input": x, "grid": grid},
              {"mode": mode, "padding": "REPLICATE", "aligned": True})["output"]
    np.testing.assert_allclose(out, ref_grid_sample(x, grid, mode, "REPLICATE", True),
                               atol=1e-12)


def test_grid_sample_rejects_unknown_padding(rng):
    with pytest.raises(Diagnostic, match="padding"):
        run("image.grid_sample", {"input": rng.standard_normal((1, 1, 2, 2)),
                                  "grid": np.zeros((1, 1, 1, 2))}, {"padding": "WRAP"})
