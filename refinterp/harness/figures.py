"""The figures of a failing comparison, small enough for the JSON report and drawn by the HTML
report (docs/harness.md, "The HTML report"): per mismatched output, its error map — per element
the error over the error allowed there, so that an element fails exactly where the ratio is
above 1 — as 2-D slices reduced to at most MAX_CELLS × MAX_CELLS cells (each cell the
greatest ratio it covers, so that no failing element is averaged away), the worst element,
the histogram of ULP distances, and for an image-like output (rank ≥ 3: the last two axes are
the spatial ones) expected, got and their difference on the worst element's slice."""

from __future__ import annotations

from typing import Any

import numpy as np

from refinterp.golden.tolerance import is_real, ulp_distance
from refinterp.harness.compare import (ULP_BINS, Override, _numeric, allowed_for, bound_for,
                                       element_verdicts)
from refinterp.harness.suite import Case
from refinterp.io import flatten_packs

MAX_CELLS = 48    # cells per side of a drawn slice
MAX_SLICES = 4    # 2-D slices drawn per output
MAX_OUTPUTS = 4   # outputs drawn per case
CAP = 1e300       # the ratio of a non-finite mismatch (NaN where a number is expected, ...)
IMAGE_SIDE = 4    # an output of rank >= 3 whose last two axes are this long is image-like


def failure_figures(case: Case, actual: dict[str, Any], keys: list[str],
                    override: Override = Override()) -> list[dict[str, Any]]:
    """The figures of each mismatched output in `keys` (same shape as the golden; others are
    left out). Never raises: a figure that cannot be made is left out."""
    figures = []
    try:
        got = {k: np.asarray(v) for k, v in flatten_packs(dict(actual)).items()}
    except (TypeError, ValueError):
        return []
    for key in keys[:MAX_OUTPUTS]:
        want = case.expected.get(key)
        if want is None or key not in got or got[key].shape != want.shape or want.size == 0:
            continue
        try:
            with np.errstate(all="ignore"):
                figures.append(output_figure(case, key, got[key], want, override))
        except (TypeError, ValueError, OverflowError):
            continue
    return figures


def error_ratio(case: Case, key: str, have: np.ndarray, want: np.ndarray,
                override: Override = Override()) -> np.ndarray:
    """Per element: the error over the error allowed there — the smaller of |got − expected| /
    the absolute limit and the ULP distance / the ULP window, so that it is above 1 exactly
    where the element fails; where no error at all is allowed (an exact tolerance, an int),
    1 + the ULP distance (1 + |got − expected| for ints); CAP for a non-finite mismatch."""
    ok = element_verdicts(case, key, have, want, override)
    have = _numeric(have, want)
    if is_real(have.dtype) and is_real(want.dtype):
        bound = bound_for(case, key, have, override)
        a64, e64 = have.astype(np.float64), want.astype(np.float64)
        finite = np.isfinite(a64) & np.isfinite(e64)
        limit = bound.atol + bound.rtol * np.abs(e64)
        allowed = allowed_for(case, key, have, override)
        if allowed is not None:
            per_element = np.broadcast_to(np.asarray(allowed, np.float64), want.shape)
            limit = np.where(np.isnan(per_element), limit, per_element)
        difference = np.where(finite, np.abs(a64 - e64), 0.0)
        ulps = np.zeros(want.shape)
        ulps[finite] = ulp_distance(have[finite], want[finite])
        ratio = np.minimum(_over(difference, limit), _over(ulps, np.float64(bound.ulp)))
        ratio = np.where(np.isinf(ratio), 1.0 + ulps, ratio)  # nothing allowed at all
        ratio = np.where(finite, ratio, np.where(ok, 0.0, CAP))
    else:
        ratio = 1.0 + np.abs(have.astype(np.float64) - want.astype(np.float64))
    ratio = np.where(ok, np.minimum(ratio, 1.0), np.maximum(ratio, np.nextafter(1.0, 2.0)))
    return np.minimum(np.nan_to_num(ratio, nan=CAP, posinf=CAP), CAP)


def _over(error: np.ndarray, allowed: Any) -> np.ndarray:
    """error / allowed; infinite where nothing is allowed (allowed 0)."""
    allowed = np.broadcast_to(allowed, error.shape)
    safe = np.where(allowed > 0, allowed, 1.0)
    return np.where(allowed > 0, error / safe, np.inf)


def output_figure(case: Case, key: str, have: np.ndarray, want: np.ndarray,
                  override: Override = Override()) -> dict[str, Any]:
    """The figure of one mismatched output (see the module docstring)."""
    ratio = error_ratio(case, key, have, want, override)
    worst = tuple(int(i) for i in np.unravel_index(int(np.argmax(ratio)), ratio.shape))
    figure: dict[str, Any] = {
        "output": key, "shape": list(want.shape), "dtype": str(have.dtype),
        "worst": list(worst), "worst_ratio": _round(float(ratio[worst])),
        "failing": int((ratio > 1).sum()), "slices": _slices(ratio, worst)}
    numeric = _numeric(have, want)
    if is_real(numeric.dtype) and is_real(want.dtype):
        finite = (ratio > 1) & np.isfinite(numeric.astype(np.float64)) & \
            np.isfinite(want.astype(np.float64))
        if finite.any():
            figure["ulp_histogram"] = ulp_histogram(ulp_distance(numeric[finite],
                                                                 want[finite]))
        if want.ndim >= 3 and min(want.shape[-2:]) >= IMAGE_SIDE:
            lead = worst[:-2]
            got64, want64 = numeric[lead].astype(np.float64), want[lead].astype(np.float64)
            figure["images"] = {"index": list(lead),
                                "expected": _grid(_pool(want64, np.mean)),
                                "got": _grid(_pool(got64, np.mean)),
                                "difference": _grid(_pool(got64 - want64, np.mean))}
    return figure


def ulp_histogram(ulps: np.ndarray) -> list[list[Any]]:
    """[label, count] per bin of compare.ULP_BINS (as the text report's histogram)."""
    bins, low = [], 0
    for high in ULP_BINS:
        bins.append([f"≤{high}" if low == 0 else f"{low + 1}-{high}",
                     int(((ulps > low) & (ulps <= high)).sum())])
        low = high
    bins.append([f">{low}", int((ulps > low).sum())])
    return bins


def _slices(ratio: np.ndarray, worst: tuple[int, ...]) -> list[dict[str, Any]]:
    """Up to MAX_SLICES 2-D slices over the last two axes (a vector is one row; a scalar one
    cell): the worst element's first, then those with the most failing elements."""
    if ratio.ndim < 2:
        plane = ratio.reshape(1, -1)
        return [_slice([], plane, (0, worst[0]) if worst else (0, 0))]
    lead_shape = ratio.shape[:-2]
    failing = (ratio > 1).reshape(int(np.prod(lead_shape)), -1).sum(axis=1)
    first = worst[:-2]
    order = np.argsort(-failing, kind="stable")  # the most failing elements first
    rest = [tuple(int(i) for i in np.unravel_index(int(k), lead_shape))
            for k in order[:MAX_SLICES + 1] if failing[k]]
    chosen = [first] + [lead for lead in rest if lead != first]
    return [_slice(list(lead), ratio[lead], worst[-2:] if lead == first else None)
            for lead in chosen[:MAX_SLICES]]


def _slice(lead: list[int], plane: np.ndarray, worst: tuple[int, ...] | None) -> dict[str, Any]:
    rows, columns = _blocks(plane.shape)
    cell = None if worst is None else [worst[0] // rows, worst[1] // columns]
    return {"index": lead, "rows": plane.shape[0], "columns": plane.shape[1],
            "block": [rows, columns], "ratio": _grid(_pool(plane, np.max)), "worst": cell}


def _blocks(shape: tuple[int, ...]) -> tuple[int, int]:
    """The elements per cell along each axis so that a side has at most MAX_CELLS cells."""
    return tuple(max(1, -(-side // MAX_CELLS)) for side in shape)  # type: ignore[return-value]


def _pool(plane: np.ndarray, reduce: Any) -> np.ndarray:
    """`plane` reduced block by block (max or mean) to at most MAX_CELLS per side."""
    rows, columns = _blocks(plane.shape)
    if rows == columns == 1:
        return plane
    height, width = -(-plane.shape[0] // rows), -(-plane.shape[1] // columns)
    out = np.empty((height, width))
    for r in range(height):
        for c in range(width):
            out[r, c] = reduce(plane[r * rows:(r + 1) * rows, c * columns:(c + 1) * columns])
    return out


def _round(value: float) -> float | None:
    """A JSON-safe number with 4 significant digits (None for NaN or an infinity)."""
    return float(f"{value:.4g}") if np.isfinite(value) else None


def _grid(plane: np.ndarray) -> list[list[float | None]]:
    return [[_round(float(v)) for v in row] for row in plane]
