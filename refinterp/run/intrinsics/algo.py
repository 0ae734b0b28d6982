"""Intrinsics of the `algo` module (spec §4.7): operators the spec declares without a body
because they are "inherently sequential". The semantics here follow the Khronos SkriptND
runtime (`runtime/intrinsics.h`) wherever it decides something; docs/stdlib.md lists the
choices."""

from __future__ import annotations

from typing import Any

import numpy as np

from refinterp.core.diagnostics import Diagnostic
from refinterp.language.instance import OperatorInstance
from refinterp.language.values import NULL
from refinterp.run.intrinsics import intrinsic


@intrinsic("algo.top_k")
def top_k(instance: OperatorInstance, inputs: dict[str, Any]) -> dict[str, Any]:
    """The `min(k, m)` largest (`largest=true`) or smallest items of every line of `input`
    along `axis` (negative counts from the end), with their indices along that axis.

    Order: by value, descending for `largest` and ascending otherwise; equal values keep the
    lower index first (a stable selection, as the Khronos runtime's comparators). NaN counts as
    greater than every number (NumPy's sort order), so it is selected first by `largest` and
    last otherwise; -0.0 equals 0.0. `sorted=false` leaves the order unspecified in the spec
    (the Khronos runtime uses std::nth_element); refinterp returns the sorted order then too,
    which is one valid order, so results must be compared as sets.
    """
    symbols = instance.symbols
    data = np.asarray(inputs["input"])
    axis = symbols["axis"] % data.ndim
    count = min(symbols["k"], data.shape[axis])
    lines = np.moveaxis(data, axis, -1)
    nan = np.isnan(lines)
    value = np.where(nan, 0.0, lines)
    position = np.broadcast_to(np.arange(lines.shape[-1]), lines.shape)
    if symbols["largest"]:
        keys = (position, -value, ~nan)  # NaN first, then descending values, lower index first
    else:
        keys = (position, value, nan)  # ascending values, NaN last, lower index first
    order = np.lexsort(keys, axis=-1)[..., :count] if lines.size else \
        np.zeros(lines.shape[:-1] + (count,), dtype=np.int64)
    values = np.take_along_axis(lines, order, axis=-1)
    return {"values": np.moveaxis(values, -1, axis).astype(np.float64),
            "indices": np.moveaxis(order, -1, axis).astype(np.int64)}


def _corners(box: np.ndarray, centered: bool) -> tuple[float, float, float, float]:
    """(y_min, x_min, y_max, x_max) of a box given as [y1, x1, y2, x2] (any two opposite
    corners) or, centered, as [x_center, y_center, width, height]."""
    if centered:
        x, y, width, height = (float(v) for v in box)
        return y - height / 2, x - width / 2, y + height / 2, x + width / 2
    y1, x1, y2, x2 = (float(v) for v in box)
    return min(y1, y2), min(x1, x2), max(y1, y2), max(x1, x2)


def _iou(a: tuple[float, ...], b: tuple[float, ...]) -> float:
    """Intersection over union; 0 when the boxes do not intersect."""
    height = min(a[2], b[2]) - max(a[0], b[0])
    width = min(a[3], b[3]) - max(a[1], b[1])
    inter = max(0.0, height) * max(0.0, width)
    if inter == 0.0:
        return 0.0
    area_a = (a[2] - a[0]) * (a[3] - a[1])
    area_b = (b[2] - b[0]) * (b[3] - b[1])
    return inter / (area_a + area_b - inter)


@intrinsic("algo.nonmax_suppress")
def nonmax_suppress(instance: OperatorInstance, inputs: dict[str, Any]) -> dict[str, Any]:
    """Greedy non-maximum suppression, separately for every batch item `b` and class `c`.

    Candidates: the boxes whose score is greater than `score_threshold` (all when it is
    null). Repeatedly the candidate with the highest score is taken — on equal scores the one
    with the HIGHER box index (the Khronos runtime pops a max-heap of (score, index) pairs) —
    and kept unless its IoU with a box already kept for the same (b, c) is greater than
    `iou_threshold`; at most `max_outputs_per_class` boxes are kept per (b, c).

    Boxes: `CORNERS` is [y1, x1, y2, x2] of two opposite corners, `CENTER` is
    [x_center, y_center, width, height]. IoU = intersection / union, 0 without intersection.
    Output: one row [b, c, box index] per kept box, ordered by b, then c, then selection
    order; its length is dynamic (at most b * c * max_outputs_per_class). NaN in `boxes` or
    `scores` is a diagnostic.
    """
    symbols = instance.symbols
    boxes = np.asarray(inputs["boxes"], dtype=np.float64)
    scores = np.asarray(inputs["scores"], dtype=np.float64)
    for name, array in (("boxes", boxes), ("scores", scores)):
        if np.isnan(array).any():
            raise Diagnostic(f"nonmax_suppress: '{name}' contains NaN",
                             instance.definition.span)
    centered = symbols["box_format"] == "CENTER"
    limit = symbols["max_outputs_per_class"]
    iou_threshold = symbols["iou_threshold"]
    score_threshold = symbols["score_threshold"]
    has_threshold = score_threshold is not NULL
    rows: list[tuple[int, int, int]] = []
    for b in range(scores.shape[0]):
        corners = [_corners(box, centered) for box in boxes[b]]
        for c in range(scores.shape[1]):
            candidates = [(float(s), i) for i, s in enumerate(scores[b, c])
                          if not has_threshold or s > score_threshold]
            candidates.sort(reverse=True)  # highest score first, then the higher index
            kept: list[int] = []
            for _, i in candidates:
                if len(kept) >= limit:
                    break
                if all(_iou(corners[i], corners[j]) <= iou_threshold for j in kept):
                    kept.append(i)
            rows.extend((b, c, i) for i in kept)
    return {"indices": np.array(rows, dtype=np.int64).reshape(len(rows), 3)}
