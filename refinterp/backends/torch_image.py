"""Torch translations of the `image` stdlib operators.

Each translation's docstring gives its mapping: SkriptND attribute -> torch argument. The
resampled axes are moved last and the others flattened into a batch (`torch_nn._trailing`),
the layout F.interpolate and F.grid_sample take.
"""

from __future__ import annotations

import math
from typing import Any

import torch
import torch.nn.functional as F

from refinterp.backends.torch_common import Call, axis_of, require, translation, unsupported
from refinterp.backends.torch_nn import _trailing

LINEAR_MODES = {1: "linear", 2: "bilinear", 3: "trilinear"}


def _axes(c: Call, x: Any) -> list[int]:
    return [axis_of(a, x.dim()) for a in (c.ints("axes") or list(range(x.dim())))]


@translation("image.nearest_downsample", "output")
def nearest_downsample(c: Call) -> Any:
    """axes, factor -> a step-`factor` slice of each axis (x[..., ::factor])."""
    x = c["input"]
    index = [slice(None)] * x.dim()
    for axis, factor in zip(_axes(c, x), c.ints("factor")):
        index[axis] = slice(None, None, factor)  # a step of 0 is rejected by the slicing
    return x[tuple(index)]


@translation("image.nearest_upsample", "output")
def nearest_upsample(c: Call) -> Any:
    """axes, factor -> torch.repeat_interleave(repeats=factor, dim=axis) per axis."""
    x = c["input"]
    for axis, factor in zip(_axes(c, x), c.ints("factor")):
        x = torch.repeat_interleave(x, factor, dim=axis)
    return x


@translation("image.area_downsample", "output")
def area_downsample(c: Call) -> Any:
    """axes, factor -> F.avg_pool (kernel = stride = factor) over the moved axes."""
    x = c["input"]
    axes, factors = _axes(c, x), c.ints("factor")
    require(1 <= len(axes) <= 3, f"area downsampling of {len(axes)} axes")
    pools = {1: F.avg_pool1d, 2: F.avg_pool2d, 3: F.avg_pool3d}
    return _trailing(x, axes, lambda t: pools[len(axes)](t, factors, factors))


@translation("image.linear_upsample", "output")
def linear_upsample(c: Call) -> Any:
    """symmetric=true, replicate_border=true -> F.interpolate(mode=(bi/tri)linear,
    scale_factor=factor, align_corners=False) (half-pixel centres, edge clamped); the other
    combinations have no torch mode."""
    x = c["input"]
    axes, factors = _axes(c, x), c.ints("factor")
    require(c.attr("symmetric", True) and c.attr("replicate_border", True),
            "linear_upsample with symmetric=false or replicate_border=false")
    require(1 <= len(axes) <= 3, f"linear upsampling of {len(axes)} axes")
    return _trailing(x, axes, lambda t: F.interpolate(
        t, scale_factor=[float(f) for f in factors], mode=LINEAR_MODES[len(axes)],
        align_corners=False))


def _nearest(x: Any, axes: list[int], size: list[int], transform: str, rounding: str) -> Any:
    """SYMMETRIC + ROUND_PREFER_CEIL -> mode "nearest-exact" (floor((o + 1/2) s / size));
    ASYMMETRIC + FLOOR -> mode "nearest" (floor(o s / size)); others have no torch mode."""
    modes = {("SYMMETRIC", "ROUND_PREFER_CEIL"): "nearest-exact",
             ("ASYMMETRIC", "FLOOR"): "nearest"}
    mode = modes.get((transform, rounding))
    require(mode is not None, f"nearest resizing with {transform} / {rounding}")
    require(1 <= len(axes) <= 3, f"resizing {len(axes)} axes")
    return _trailing(x, axes, lambda t: F.interpolate(t, size=size, mode=mode))


def _smooth(x: Any, axes: list[int], size: list[int], transform: str, antialias: bool,
            cubic: bool) -> Any:
    """SYMMETRIC -> align_corners=False, ALIGNED -> align_corners=True (ASYMMETRIC: no torch
    mode); antialias -> antialias; mode (bi/tri)linear or bicubic: F.interpolate."""
    require(transform in ("SYMMETRIC", "ALIGNED"), f"coordinate_transform {transform!r}")
    require(1 <= len(axes) <= 3, f"resizing {len(axes)} axes")
    if cubic:
        require(len(axes) == 2 or (antialias and len(axes) == 1),
                f"cubic resizing of {len(axes)} axes (torch: bicubic only)")
    if antialias and len(axes) != 2:
        # torch antialiases only bilinear / bicubic on 4-D tensors: one axis runs as 2-D with
        # a unit axis (resized 1 -> 1, the identity); three axes are not expressible
        require(len(axes) == 1, f"antialiased resizing of {len(axes)} axes")
        # the unit axis goes first: torch 2.13's antialiased kernels return wrong rows when
        # the *output width* is 1 (test_diff_antialias_output_width_one)
        return _smooth(x.unsqueeze(-1), [x.dim()] + axes, [1] + size, transform, True,
                       cubic).squeeze(-1)
    mode = "bicubic" if cubic else LINEAR_MODES[len(axes)]
    return _trailing(x, axes, lambda t: F.interpolate(
        t, size=size, mode=mode, align_corners=transform == "ALIGNED", antialias=antialias))


@translation("image.nearest_resize", "output")
def nearest_resize(c: Call) -> Any:
    """size -> size; coordinate_transform, rounding_method -> the interpolate mode (see
    _nearest)."""
    x = c["input"]
    axes, size = _axes(c, x), c.ints("size")
    return _nearest(x, axes, size, c.attr("coordinate_transform", "SYMMETRIC"),
                    c.attr("rounding_method", "ROUND_PREFER_FLOOR"))


@translation("image.linear_resize", "output")
def linear_resize(c: Call) -> Any:
    """size -> size; coordinate_transform, antialias -> see _smooth."""
    x = c["input"]
    axes, size = _axes(c, x), c.ints("size")
    return _smooth(x, axes, size, c.attr("coordinate_transform", "SYMMETRIC"),
                   c.attr("antialias", True), False)


@translation("image.cubic_resize", "output")
def cubic_resize(c: Call) -> Any:
    """size -> size; coeff_a: only -0.75 (torch's bicubic A); coordinate_transform,
    antialias -> see _smooth."""
    x = c["input"]
    axes, size = _axes(c, x), c.ints("size")
    require(c.attr("coeff_a", -0.75) == -0.75, f"coeff_a={c.attr('coeff_a')}")
    return _smooth(x, axes, size, c.attr("coordinate_transform", "SYMMETRIC"),
                   c.attr("antialias", True), True)


def _resize(c: Call, x: Any, axes: list[int], size: list[int]) -> Any:
    """mode NEAREST / LINEAR / CUBIC -> the three translations above."""
    mode = c.attr("mode", "NEAREST")
    transform = c.attr("coordinate_transform", "SYMMETRIC")
    if mode == "NEAREST":
        return _nearest(x, axes, size, transform, c.attr("rounding_method",
                                                         "ROUND_PREFER_FLOOR"))
    if mode in ("LINEAR", "CUBIC"):
        if mode == "CUBIC":
            require(c.attr("cubic_coeff_a", -0.75) == -0.75,
                    f"cubic_coeff_a={c.attr('cubic_coeff_a')}")
        return _smooth(x, axes, size, transform, c.attr("antialias", True), mode == "CUBIC")
    raise unsupported(f"resize mode {mode!r}")


@translation("image.resize", "output")
def resize(c: Call) -> Any:
    """size, mode and the mode's attributes: see _resize."""
    x = c["input"]
    return _resize(c, x, _axes(c, x), c.ints("size"))


@translation("image.rescale", "output")
def rescale(c: Call) -> Any:
    """factor -> size = round(s * factor), halves away from zero (SkriptND's rule, computed
    here), then as resize (F.interpolate with that size, not its scale_factor)."""
    x = c["input"]
    axes = _axes(c, x)
    factors = c.attr("factor")
    factors = factors if isinstance(factors, list) else [factors]
    size = [int(math.floor(x.shape[a] * f + 0.5)) for a, f in zip(axes, factors)]
    return _resize(c, x, axes, size)


@translation("image.grid_sample", "output")
def grid_sample(c: Call) -> Any:
    """mode NEAREST/LINEAR/CUBIC -> "nearest"/"bilinear"/"bicubic", padding
    ZEROS/REPLICATE/REFLECT -> padding_mode "zeros"/"border"/"reflection", aligned ->
    align_corners: F.grid_sample (grid component k along spatial axis d-1-k, as torch)."""
    modes = {"NEAREST": "nearest", "LINEAR": "bilinear", "CUBIC": "bicubic"}
    paddings = {"ZEROS": "zeros", "REPLICATE": "border", "REFLECT": "reflection"}
    mode, padding = c.attr("mode", "LINEAR"), c.attr("padding", "ZEROS")
    require(mode in modes, f"grid_sample mode {mode!r}")
    require(padding in paddings, f"grid_sample padding {padding!r}")
    return F.grid_sample(c["input"], c["grid"], mode=modes[mode], padding_mode=paddings[padding],
                         align_corners=c.attr("aligned", False))


def _roi(c: Call) -> Any:
    """Not in torch core (torchvision.ops.roi_pool / roi_align, not a dependency)."""
    raise unsupported("ROI pooling without torchvision")


translation("image.max_roi_pool", "output")(_roi)
translation("image.avg_roi_pool", "output")(_roi)
