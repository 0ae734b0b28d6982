"""Intrinsics of the `image` module (spec §4.5): the operators the spec declares without a
body — cubic_resize (§4.5.2) and the ROI pools (§4.5.3). Their exact semantics are stated in
the docstrings; docs/stdlib.md lists the choices made where the spec is silent."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from refinterp.core.diagnostics import Diagnostic
from refinterp.language.instance import OperatorInstance
from refinterp.run.intrinsics import intrinsic


def resize_positions(extent: int, size: int, transform: str) -> np.ndarray:
    """The input position (a real coordinate, pixel centres at integers) of every output cell
    of one axis, by the resize family's coordinate transforms (as in nearest/linear_resize):
    SYMMETRIC o * q + (q / 2 - 1/2) with q = extent / size (half-pixel centres), ASYMMETRIC
    o * q, ALIGNED o * (extent - 1) / (size - 1) (0 for size 1: corners aligned)."""
    o = np.arange(size, dtype=np.float64)
    if transform == "ALIGNED":
        return o * (0.0 if size <= 1 else (extent - 1) / (size - 1))
    scale = extent / size
    if transform == "ASYMMETRIC":
        return o * scale
    return o * scale + (0.5 * scale - 0.5)


def cubic_weight(distance: np.ndarray, a: float) -> np.ndarray:
    """Keys' cubic convolution kernel with parameter `a` at |distance| (0 from 2 on)."""
    t = np.abs(distance)
    near = ((a + 2.0) * t - (a + 3.0)) * t * t + 1.0
    far = ((a * t - 5.0 * a) * t + 8.0 * a) * t - 4.0 * a
    return np.where(t <= 1.0, near, np.where(t < 2.0, far, 0.0))


@intrinsic("image.cubic_resize")
def cubic_resize(instance: OperatorInstance, inputs: dict[str, Any]) -> dict[str, Any]:
    """Bicubic (n-cubic) resize of `input` along `axes` to `size`, one axis after the other in
    the order of `axes`.

    Along an axis of extent n, output cell o reads the input position x given by
    `coordinate_transform` (see `resize_positions`); with f = floor(x) it sums the four taps
    f-1 .. f+2, each tap i weighted by Keys' kernel W(x - i) with a = `coeff_a` and reading
    input[clamp(i, 0, n - 1)] (the border is replicated, as the linear resize clamps). The
    weights are not renormalised. `antialias` has no effect (as in the spec's linear_resize
    body): downscaling samples the kernel at its own width.
    """
    symbols = instance.symbols
    output = np.asarray(inputs["input"], dtype=np.float64)
    a = float(symbols["coeff_a"])
    for axis, size in zip(symbols["axes"], symbols["size"]):
        axis %= output.ndim
        extent = output.shape[axis]
        x = resize_positions(extent, size, symbols["coordinate_transform"])
        floor = np.floor(x).astype(np.int64)
        shape = [1] * output.ndim
        shape[axis] = size
        result = np.zeros(output.shape[:axis] + (size,) + output.shape[axis + 1:])
        for tap in range(-1, 3):
            index = floor + tap
            weight = cubic_weight(x - index, a).reshape(shape)
            with np.errstate(invalid="ignore"):  # a zero weight times inf: NaN, as IEEE says
                result += weight * np.take(output, np.clip(index, 0, extent - 1), axis=axis)
        output = result
    return {"output": output}


def _roi_bins(start: float, end: float, extent: int, bins: int) -> list[tuple[int, int]]:
    """The [low, high) cell ranges of `bins` pooling bins over the ROI [start, end] (inclusive
    ends, rounded half away from zero), clipped to [0, extent)."""
    first = int(math.copysign(math.floor(abs(start) + 0.5), start))
    last = int(math.copysign(math.floor(abs(end) + 0.5), end))
    length = max(last - first + 1, 1)
    ranges = []
    for p in range(bins):  # floor(p L / P) and ceil((p + 1) L / P), exactly in integers
        low = min(max(p * length // bins + first, 0), extent)
        high = min(max(-(-(p + 1) * length // bins) + first, 0), extent)
        ranges.append((low, high))
    return ranges


def _roi_pool(instance: OperatorInstance, inputs: dict[str, Any], reduce: Any) -> dict[str, Any]:
    data = np.asarray(inputs["input"], dtype=np.float64)
    rois = np.asarray(inputs["rois"], dtype=np.float64)
    index = np.asarray(inputs["index"])
    sizes = tuple(instance.symbols["output_size"])
    d = len(sizes)
    batch, channels, spatial = data.shape[0], data.shape[1], data.shape[2:]
    if not np.isfinite(rois).all():
        raise Diagnostic(f"{instance.definition.name}: 'rois' must be finite",
                         instance.definition.span)
    bad = [int(i) for i in index if not 0 <= i < batch]
    if bad:
        raise Diagnostic(f"{instance.definition.name}: 'index' must be between 0 (inclusive) "
                         f"and the batch size {batch} (exclusive); got {bad[0]}",
                         instance.definition.span)
    output = np.zeros((len(rois), channels) + sizes)
    for m, roi in enumerate(rois):
        axes_bins = [_roi_bins(roi[k], roi[d + k], spatial[k], sizes[k]) for k in range(d)]
        for cell in np.ndindex(*sizes):
            window = tuple(slice(*axes_bins[k][cell[k]]) for k in range(d))
            values = data[(int(index[m]), slice(None)) + window].reshape(channels, -1)
            if values.shape[1]:
                output[(m, slice(None)) + cell] = reduce(values, axis=1)
    return {"output": output}


@intrinsic("image.max_roi_pool")
def max_roi_pool(instance: OperatorInstance, inputs: dict[str, Any]) -> dict[str, Any]:
    """Max pooling of regions of interest (Fast R-CNN / ONNX MaxRoiPool with spatial_scale 1,
    generalised to d spatial dimensions).

    `input` is [b, c, s..(d)]; ROI m is `rois[m] = [start_0 .. start_(d-1), end_0 ..
    end_(d-1)]` (for images [y1, x1, y2, x2], like the CORNERS boxes of nonmax_suppress) on
    batch item `index[m]`. Per dimension the ends are rounded half away from zero and are
    inclusive: the ROI has extent L = max(end - start + 1, 1), and bin p of P = output_size
    covers cells [floor(p L / P) + start, ceil((p + 1) L / P) + start) (exact integer
    arithmetic), clipped to the input.
    Output [m, c, output_size..]: the maximum over each bin, 0 for an empty bin. An index
    outside [0, b) or a non-finite ROI coordinate is a diagnostic.
    """
    return _roi_pool(instance, inputs, np.max)


@intrinsic("image.avg_roi_pool")
def avg_roi_pool(instance: OperatorInstance, inputs: dict[str, Any]) -> dict[str, Any]:
    """Average pooling of regions of interest: the bins of `max_roi_pool` (same ROI layout,
    rounding, inclusive ends and clipping), each output the mean of the cells of its bin
    (0 for an empty bin)."""
    return _roi_pool(instance, inputs, np.mean)
