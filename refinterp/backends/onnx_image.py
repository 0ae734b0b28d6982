"""ONNX translations of the `image` operators (for the onnxruntime back end).

Resampling maps to ONNX Resize (opset 18+: `axes`, explicit output `sizes`, antialias 0):

- coordinate_transform SYMMETRIC / ASYMMETRIC / ALIGNED -> coordinate_transformation_mode
  half_pixel / asymmetric / align_corners;
- rounding_method FLOOR / CEIL / ROUND_PREFER_FLOOR / ROUND_PREFER_CEIL -> nearest_mode
  floor / ceil / round_prefer_floor / round_prefer_ceil;
- mode NEAREST / LINEAR / CUBIC -> mode nearest / linear / cubic;
- coeff_a, cubic_coeff_a -> cubic_coeff_a, with exclude_outside = 0 (refinterp does not
  renormalise the taps);
- antialias (no effect in SkriptND's bodies) -> antialias = 0.
"""

from __future__ import annotations

import math
import numpy as np

from refinterp.backends.onnx_graph import GraphBuilder, positive_axes, translation, unsupported


TRANSFORMS = {"SYMMETRIC": "half_pixel", "ASYMMETRIC": "asymmetric", "ALIGNED": "align_corners"}
ROUNDING = {"FLOOR": "floor", "CEIL": "ceil", "ROUND_PREFER_FLOOR": "round_prefer_floor",
            "ROUND_PREFER_CEIL": "round_prefer_ceil"}
MODES = {"NEAREST": "nearest", "LINEAR": "linear", "CUBIC": "cubic"}



def _axes(g: GraphBuilder) -> list[int]:
    rank = len(g.shape("input"))
    return positive_axes(g.attr("axes", list(range(rank))), rank)


def resize(g: GraphBuilder, mode: str, sizes: list[int], transform: str,
           rounding: str = "ROUND_PREFER_FLOOR", coeff_a: float = -0.75) -> str:
    """A Resize node over `axes` to `sizes` with the mapping of the module docstring."""
    if transform not in TRANSFORMS:
        raise unsupported(f"coordinate_transform '{transform}'")
    if rounding not in ROUNDING:
        raise unsupported(f"rounding_method '{rounding}'")
    if mode not in MODES:
        raise unsupported(f"mode '{mode}'")
    if any(v <= 0 for v in sizes):
        raise unsupported("non-positive sizes")
    return g.node("Resize", [g.input("input"), "", "", g.ints(sizes)], axes=_axes(g),
                  mode=MODES[mode], coordinate_transformation_mode=TRANSFORMS[transform],
                  nearest_mode=ROUNDING[rounding] if mode == "NEAREST" else None,
                  cubic_coeff_a=coeff_a if mode == "CUBIC" else None, exclude_outside=0,
                  antialias=0)


def _scaled(g: GraphBuilder, up: bool) -> list[int]:
    s = g.shape("input")
    return [s[a] * f if up else s[a] // f for a, f in zip(_axes(g), g.attr("factor"))]


@translation("image.nearest_upsample")
def _nearest_upsample(g: GraphBuilder) -> None:
    """nearest_upsample{axes, factor}: cell o reads o / factor (floor) -> Resize nearest,
    asymmetric, floor, sizes = s * factor."""
    g.output("output", resize(g, "NEAREST", _scaled(g, True), "ASYMMETRIC", "FLOOR"))


@translation("image.nearest_downsample")
def _nearest_downsample(g: GraphBuilder) -> None:
    """nearest_downsample{axes, factor}: cell o reads o * factor -> Resize nearest,
    asymmetric, floor, sizes = s / factor (the position o * factor is exact)."""
    s = g.shape("input")
    if any(s[a] % f for a, f in zip(_axes(g), g.attr("factor")) if f > 0):
        raise unsupported("extents not divisible by the factor")
    g.output("output", resize(g, "NEAREST", _scaled(g, False), "ASYMMETRIC", "FLOOR"))


@translation("image.area_downsample")
def _area_downsample(g: GraphBuilder) -> None:
    """area_downsample{axes, factor} -> AveragePool(kernel_shape = strides = factor) when
    `axes` are the trailing axes (ONNX pools the axes after N and C): the leading axes are
    reshaped into [1, their volume] first and restored after."""
    s = list(g.shape("input"))
    k = len(g.attr("factor"))
    if sorted(_axes(g)) != list(range(len(s) - k, len(s))) or \
            _axes(g) != sorted(_axes(g)):
        raise unsupported(f"area_downsample over axes {g.attr('axes')} (not the trailing "
                          f"axes in order)")
    factor = list(g.attr("factor"))
    lead = s[:len(s) - k]
    x = g.node("Reshape", [g.input("input"),
                           g.ints([1, int(np.prod(lead)) if lead else 1] + s[len(s) - k:])])
    y = g.node("AveragePool", [x], kernel_shape=factor, strides=factor)
    out = lead + [v // f if f > 0 else 0 for v, f in zip(s[len(s) - k:], factor)]
    g.output("output", g.node("Reshape", [y, g.ints(out)], allowzero=1))


@translation("image.linear_upsample")
def _linear_upsample(g: GraphBuilder) -> None:
    """linear_upsample{axes, factor, symmetric, replicate_border} -> Resize linear, sizes =
    s * factor, symmetric -> half_pixel (true) / asymmetric (false); ONNX clamps positions to
    the border, i.e. replicate_border = true; false (zeros beyond) is unsupported."""
    if not g.attr("replicate_border", True):
        raise unsupported("replicate_border = false (ONNX Resize replicates the border)")
    transform = "SYMMETRIC" if g.attr("symmetric", True) else "ASYMMETRIC"
    g.output("output", resize(g, "LINEAR", _scaled(g, True), transform))


@translation("image.nearest_resize")
def _nearest_resize(g: GraphBuilder) -> None:
    """nearest_resize -> Resize nearest (module docstring)."""
    g.output("output", resize(g, "NEAREST", list(g.attr("size")),
                              g.attr("coordinate_transform", "SYMMETRIC"),
                              g.attr("rounding_method", "ROUND_PREFER_FLOOR")))


@translation("image.linear_resize")
def _linear_resize(g: GraphBuilder) -> None:
    """linear_resize -> Resize linear (antialias ignored as by SkriptND)."""
    g.output("output", resize(g, "LINEAR", list(g.attr("size")),
                              g.attr("coordinate_transform", "SYMMETRIC")))


@translation("image.cubic_resize")
def _cubic_resize(g: GraphBuilder) -> None:
    """cubic_resize{coeff_a} -> Resize cubic, cubic_coeff_a = coeff_a, exclude_outside = 0."""
    g.output("output", resize(g, "CUBIC", list(g.attr("size")),
                              g.attr("coordinate_transform", "SYMMETRIC"),
                              coeff_a=g.attr("coeff_a", -0.75)))


@translation("image.resize")
def _resize(g: GraphBuilder) -> None:
    """resize{mode, ...} -> Resize (module docstring), cubic_coeff_a -> cubic_coeff_a."""
    g.output("output", resize(g, g.attr("mode", "NEAREST"), list(g.attr("size")),
                              g.attr("coordinate_transform", "SYMMETRIC"),
                              g.attr("rounding_method", "ROUND_PREFER_FLOOR"),
                              g.attr("cubic_coeff_a", -0.75)))


@translation("image.rescale")
def _rescale(g: GraphBuilder) -> None:
    """rescale{factor} -> Resize to sizes = round(s * factor) (half away from zero, SkriptND's
    size rule; ONNX's `scales` input would floor the size and interpolate with the factor
    itself, so explicit sizes are passed)."""
    s = g.shape("input")
    sizes = [int(math.floor(s[a] * f + 0.5)) for a, f in zip(_axes(g), g.attr("factor"))]
    g.output("output", resize(g, g.attr("mode", "NEAREST"), sizes,
                              g.attr("coordinate_transform", "SYMMETRIC"),
                              g.attr("rounding_method", "ROUND_PREFER_FLOOR"),
                              g.attr("cubic_coeff_a", -0.75)))


@translation("image.max_roi_pool")
def _max_roi_pool(g: GraphBuilder) -> None:
    """max_roi_pool{output_size}(input, rois, index) -> MaxRoiPool(input, rois5, pooled_shape =
    output_size, spatial_scale = 1): rois5 = [index, x1, y1, x2, y2] from SkriptND's
    [y1, x1, y2, x2] and index (Gather + Cast + Concat); 2-D only."""
    if len(g.shape("input")) != 4:
        raise unsupported("ROI pooling over other than 2 spatial axes")
    rois = g.node("Gather", [g.input("rois"), g.ints([1, 0, 3, 2])], axis=1)
    index = g.node("Cast", [g.node("Unsqueeze", [g.input("index"), g.ints([1])])],
                   to=11 if g.real.itemsize == 8 else 1)
    boxes = g.node("Concat", [index, rois], axis=1)
    g.output("output", g.node("MaxRoiPool", [g.input("input"), boxes],
                              pooled_shape=list(g.attr("output_size")), spatial_scale=1.0))


@translation("image.grid_sample")
def _grid_sample(g: GraphBuilder) -> None:
    """grid_sample{mode, padding, aligned} -> GridSample(mode NEAREST/LINEAR/CUBIC ->
    nearest/linear/cubic, padding ZEROS/REPLICATE/REFLECT -> padding_mode zeros/border/
    reflection, aligned -> align_corners)."""
    mode = {"NEAREST": "nearest", "LINEAR": "linear", "CUBIC": "cubic"}.get(
        g.attr("mode", "LINEAR"))
    padding = {"ZEROS": "zeros", "REPLICATE": "border", "REFLECT": "reflection"}.get(
        g.attr("padding", "ZEROS"))
    if mode is None or padding is None:
        raise unsupported(f"grid_sample mode '{g.attr('mode')}' / padding "
                          f"'{g.attr('padding')}'")
    g.output("output", g.node("GridSample", [g.input("input"), g.input("grid")], mode=mode,
                              padding_mode=padding,
                              align_corners=int(g.attr("aligned", False))))
