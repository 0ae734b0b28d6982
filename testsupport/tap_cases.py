"""Scatter formulas for the vector engine's tap-by-tap `+=`: operators, their expected values
computed one iteration at a time in NumPy, and a check of the tap counts."""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np

from refinterp.lower.vector.taps import TapForm

from testsupport.vector_cases import write


def numpy_deconv(x: np.ndarray, w: np.ndarray, stride: list[int], dilation: list[int],
                 front: list[int], size: list[int], groups: int) -> np.ndarray:
    """Transposed convolution, channels first: x [b, g * m, ix..], w [g * m, fc, fx..] ->
    [b, g * fc, size..]; input position i and filter tap j add x * w into output position
    stride * i + dilation * j - front, dropped where it is outside (spec §4 deconv)."""
    b, n, fc = x.shape[0], w.shape[0], w.shape[1]
    m = n // groups
    out = np.zeros((b, groups * fc, *size))
    for g in range(groups):
        for j in itertools.product(*(range(e) for e in w.shape[2:])):
            tap = w[(slice(g * m, (g + 1) * m), slice(None), *j)]  # [m, fc]
            y = np.einsum("bm...,mc->bc...", x[:, g * m:(g + 1) * m], tap)
            inside, where = [], []
            for a, extent in enumerate(x.shape[2:]):
                p = stride[a] * np.arange(extent) + dilation[a] * j[a] - front[a]
                keep = (p >= 0) & (p < size[a])
                inside.append(np.flatnonzero(keep))
                where.append(p[keep])
            out[(slice(None), slice(g * fc, (g + 1) * fc), *np.ix_(*where))] += \
                y[(slice(None), slice(None), *np.ix_(*inside))]
    return out


def expected_deconv(x: np.ndarray, w: np.ndarray, attributes: dict) -> np.ndarray:
    """numpy_deconv with the attributes' defaults of spec §4 deconv (channels-first data)."""
    d = x.ndim - 2
    stride = attributes.get("stride", [1] * d)
    dilation = attributes.get("dilation", [1] * d)
    fd = [(w.shape[2 + a] - 1) * dilation[a] + 1 for a in range(d)]
    if "padding" in attributes:
        padding = attributes["padding"]
        total = [padding[a] + padding[d + a] for a in range(d)]
        front = padding[:d]
    else:  # the cases here have fd >= stride, so the total padding is not negative
        total = [fd[a] - stride[a] for a in range(d)]
        upper = attributes.get("padding_align", "UPPER") == "UPPER"
        front = [t // 2 if upper else -(-t // 2) for t in total]
    size = [(x.shape[2 + a] - 1) * stride[a] + fd[a] - total[a] for a in range(d)]
    groups = attributes.get("groups", 1) or x.shape[1]
    return numpy_deconv(x, w, stride, dilation, front, size, groups)


def operator(inputs: str, output: str, formula: str) -> Path:
    return write(f"operator f {{\n    @input {{ {inputs} }}\n    @output {{ {output} }}\n"
                 f"    @lower {{\n        {formula}\n    }}\n}}\n")


THREE_FACTORS = ("x: real[12, 4]; v: real[10]; w: real[4, 3];", "y: real[24, 11];",
                 "y[|2 * i + j - 1|, |k + j - 1|] += x[i, c] * v[k] * w[c, j], "
                 "i < 12, k < 10, c < 4, j < 3;")


def expected_three_factors(x: np.ndarray, v: np.ndarray, w: np.ndarray) -> np.ndarray:
    """THREE_FACTORS's output, one iteration at a time in iteration order."""
    expected = np.zeros((24, 11))
    for i, k, c, j in itertools.product(range(12), range(10), range(4), range(3)):
        if 0 <= 2 * i + j - 1 < 24 and 0 <= k + j - 1 < 11:
            expected[2 * i + j - 1, k + j - 1] += x[i, c] * v[k] * w[c, j]
    return expected


def check_tap_counts(monkeypatch) -> list[tuple]:
    """Wrap `TapForm.hits`: the counts of every call must equal counting the tap values one
    by one (place by place); the calls' (counts shape, region) are listed as they come."""
    original, seen = TapForm.hits, []

    def counted(self, places, low, region):
        hits = original(self, places, low, region)
        expected = np.zeros(region, dtype=np.int64)
        for place in places:
            expected[place.cells(low)] += 1
        assert (np.broadcast_to(hits, region) == expected).all()
        seen.append((np.shape(hits), region))
        return hits
    monkeypatch.setattr(TapForm, "hits", counted)
    return seen
