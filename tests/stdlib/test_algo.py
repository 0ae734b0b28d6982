"""Spec §4.7 algo operators (intrinsics), each compared with an independent NumPy / Python
implementation written here, plus hand-derived cases for the choices the spec leaves open."""

from __future__ import annotations

import math

import numpy as np
import pytest

from refinterp.core.diagnostics import Diagnostic

from .conftest import run

# ----------------------------------------------------------------------------- top_k


def ref_top_k(x: np.ndarray, k: int, axis: int, largest: bool) -> tuple[np.ndarray, np.ndarray]:
    """Line by line with Python's stable sort: NaN above every number, ties by lower index."""
    moved = np.moveaxis(x, axis, -1)
    count = min(k, moved.shape[-1])
    values = np.empty(moved.shape[:-1] + (count,))
    indices = np.empty(moved.shape[:-1] + (count,), dtype=np.int64)
    for line in np.ndindex(moved.shape[:-1]):
        items = list(moved[line])

        def key(i: int) -> tuple:
            v = items[i]
            rank = (1, 0.0) if math.isnan(v) else (0, v)  # NaN is the greatest
            return (tuple(-r for r in rank), i) if largest else (rank, i)

        chosen = sorted(range(len(items)), key=key)[:count]
        values[line] = [items[i] for i in chosen]
        indices[line] = chosen
    return np.moveaxis(values, -1, axis), np.moveaxis(indices, -1, axis)


@pytest.mark.parametrize("shape,k,axis,largest", [
    ((7,), 3, 0, True),            # defaults: axis 0, largest, sorted
    ((3, 6), 4, -1, False),        # negative axis, smallest
    ((2, 5, 3), 2, 1, True),
    ((2, 3, 4), 9, -3, False),     # k beyond the extent: min(k, m) items
])
def test_top_k(rng, shape, k, axis, largest):
    x = rng.integers(-3, 4, size=shape).astype(float)  # many ties
    attrs = {"k": k} | ({} if axis == 0 else {"axis": axis}) | \
        ({} if largest else {"largest": False})
    out = run("algo.top_k", {"input": x}, attrs)
    values, indices = ref_top_k(x, k, axis, largest)
    np.testing.assert_array_equal(out["values"], values)
    np.testing.assert_array_equal(out["indices"], indices)


def test_top_k_ties_take_the_lower_index_and_nan_is_greatest():
    x = np.array([2.0, np.nan, 5.0, 2.0, 5.0, -0.0, 0.0])
    out = run("algo.top_k", {"input": x}, {"k": 4})
    np.testing.assert_array_equal(out["indices"], [1, 2, 4, 0])
    out = run("algo.top_k", {"input": x}, {"k": 3, "largest": False})
    np.testing.assert_array_equal(out["indices"], [5, 6, 0])  # -0.0 == 0.0: lower index


def test_top_k_unsorted_selects_the_same_set(rng):
    x = rng.standard_normal((3, 8))
    out = run("algo.top_k", {"input": x}, {"k": 3, "axis": 1, "sorted": False})
    _, indices = ref_top_k(x, 3, 1, True)
    assert [set(r) for r in out["indices"]] == [set(r) for r in indices]


def test_top_k_rejects_bad_attributes(rng):
    x = rng.standard_normal((2, 3))
    with pytest.raises(Diagnostic, match="positive"):
        run("algo.top_k", {"input": x}, {"k": 0})
    with pytest.raises(Diagnostic, match="axis"):
        run("algo.top_k", {"input": x}, {"k": 1, "axis": 2})


# ----------------------------------------------------------------------------- nonmax_suppress


def ref_nms(boxes: np.ndarray, scores: np.ndarray, centered: bool, max_out: int, iou_thr: float,
            score_thr: float | None) -> np.ndarray:
    """Vectorised IoU matrix per batch item, then greedy selection per class."""
    if centered:
        x, y, w, h = np.moveaxis(boxes, -1, 0)
        y0, x0, y1, x1 = y - h / 2, x - w / 2, y + h / 2, x + w / 2
    else:
        a, b, c, d = np.moveaxis(boxes, -1, 0)
        y0, x0, y1, x1 = np.minimum(a, c), np.minimum(b, d), np.maximum(a, c), np.maximum(b, d)
    rows = []
    for bi in range(scores.shape[0]):
        ih = np.clip(np.minimum.outer(y1[bi], y1[bi]) - np.maximum.outer(y0[bi], y0[bi]), 0, None)
        iw = np.clip(np.minimum.outer(x1[bi], x1[bi]) - np.maximum.outer(x0[bi], x0[bi]), 0, None)
        inter = ih * iw
        area = (y1[bi] - y0[bi]) * (x1[bi] - x0[bi])
        union = area[:, None] + area[None, :] - inter
        iou = np.divide(inter, union, out=np.zeros_like(inter), where=inter > 0)
        for ci in range(scores.shape[1]):
            s = scores[bi, ci]
            # descending score; equal scores: higher index first (Khronos max-heap of pairs)
            order = sorted(range(len(s)), key=lambda i: (-s[i], -i))
            kept: list[int] = []
            for i in order:
                if score_thr is not None and not s[i] > score_thr:
                    continue
                if len(kept) == max_out:
                    break
                if not kept or iou[i, kept].max() <= iou_thr:
                    kept.append(i)
            rows += [[bi, ci, i] for i in kept]
    return np.array(rows, dtype=np.int64).reshape(-1, 3)


def random_boxes(rng: np.random.Generator, b: int, n: int) -> np.ndarray:
    corner = rng.uniform(0, 4, size=(b, n, 2))
    size = rng.uniform(0.5, 3, size=(b, n, 2))
    return np.concatenate([corner, corner + size], axis=-1)


def test_nonmax_suppress_defaults(rng):
    boxes = random_boxes(rng, 2, 6)
    scores = rng.uniform(size=(2, 3, 6))
    out = run("algo.nonmax_suppress", {"boxes": boxes, "scores": scores})["indices"]
    np.testing.assert_array_equal(out, ref_nms(boxes, scores, False, 6, 0.0, None))


@pytest.mark.parametrize("fmt", ["CORNERS", "CENTER"])
def test_nonmax_suppress_attributes(rng, fmt):
    boxes = random_boxes(rng, 2, 8)
    boxes[0, 3] = boxes[0, 3, [2, 3, 0, 1]]  # corners in the other order
    scores = np.round(rng.uniform(size=(2, 2, 8)), 1)  # score ties
    attrs = {"box_format": fmt, "max_outputs_per_class": 3, "iou_threshold": 0.3,
             "score_threshold": 0.25}
    out = run("algo.nonmax_suppress", {"boxes": boxes, "scores": scores}, attrs)["indices"]
    np.testing.assert_array_equal(out, ref_nms(boxes, scores, fmt == "CENTER", 3, 0.3, 0.25))


def test_nonmax_suppress_by_hand():
    # box 1 overlaps box 0 with IoU 0.9 / 1.1; box 2 is disjoint; scores tie for boxes 0 and 2
    boxes = np.array([[[0, 0, 1, 1], [0, 0.1, 1, 1.1], [0, 2, 1, 3]]], dtype=float)
    scores = np.array([[[0.5, 0.4, 0.5]]])
    out = run("algo.nonmax_suppress", {"boxes": boxes, "scores": scores},
              {"iou_threshold": 0.5})["indices"]
    np.testing.assert_array_equal(out, [[0, 0, 2], [0, 0, 0]])
    out = run("algo.nonmax_suppress", {"boxes": boxes, "scores": scores},
              {"iou_threshold": 0.9, "max_outputs_per_class": 0})["indices"]
    assert out.shape == (0, 3)


def test_nonmax_suppress_rejects_bad_values(rng):
    boxes = random_boxes(rng, 1, 3)
    scores = rng.uniform(size=(1, 1, 3))
    with pytest.raises(Diagnostic, match="box_format"):
        run("algo.nonmax_suppress", {"boxes": boxes, "scores": scores}, {"box_format": "XYWH"})
    with pytest.raises(Diagnostic, match="iou_threshold"):
        run("algo.nonmax_suppress", {"boxes": boxes, "scores": scores}, {"iou_threshold": 1.5})
    scores[0, 0, 1] = np.nan
    with pytest.raises(Diagnostic, match="NaN"):
        run("algo.nonmax_suppress", {"boxes": boxes, "scores": scores})
