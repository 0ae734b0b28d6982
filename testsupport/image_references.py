"""Independent NumPy references of image operators shared by several test modules: the Keys
cubic kernel and grid sampling point by point (spec §4.5 and the Khronos-era grid_sample)."""

from __future__ import annotations

import itertools

import numpy as np


def keys_kernel(t: float, a: float) -> float:
    """The Keys cubic convolution kernel with parameter `a` at distance `t`."""
    t = abs(t)
    if t <= 1:
        return (a + 2) * t ** 3 - (a + 3) * t ** 2 + 1
    if t < 2:
        return a * t ** 3 - 5 * a * t ** 2 + 8 * a * t - 4 * a
    return 0.0


def _reflect(i: int, n: int) -> int:
    """Mirror at 0 and n - 1 until inside (edge cells not repeated)."""
    if n == 1:
        return 0
    while not 0 <= i < n:
        i = -i if i < 0 else 2 * (n - 1) - i
    return i


def ref_grid_sample(x: np.ndarray, grid: np.ndarray, mode: str, padding: str,
                    aligned: bool) -> np.ndarray:
    """Point by point: taps per axis, their weights multiplied, padding applied per tap."""
    spatial = x.shape[2:]
    out = np.zeros(x.shape[:2] + grid.shape[1:-1])
    for b in range(x.shape[0]):
        for z in np.ndindex(*grid.shape[1:-1]):
            taps = []
            for gk, n in zip(grid[(b,) + z][::-1], spatial):  # x first in the grid
                p = (gk + 1) / 2 * (n - 1) if aligned else ((gk + 1) * n - 1) / 2
                f = int(np.floor(p))
                if mode == "NEAREST":
                    taps.append([(int(np.sign(p) * np.floor(abs(p) + 0.5)), 1.0)])
                elif mode == "LINEAR":
                    taps.append([(f, 1 - (p - f)), (f + 1, p - f)])
                else:
                    taps.append([(t, keys_kernel(p - t, -0.75)) for t in range(f - 1, f + 3)])
            for combo in itertools.product(*taps):
                index = [i for i, _ in combo]
                weight = np.prod([w for _, w in combo])
                if padding == "ZEROS":
                    if not all(0 <= i < n for i, n in zip(index, spatial)):
                        continue
                elif padding == "REPLICATE":
                    index = [min(max(i, 0), n - 1) for i, n in zip(index, spatial)]
                else:
                    index = [_reflect(i, n) for i, n in zip(index, spatial)]
                out[(b, slice(None)) + z] += weight * x[(b, slice(None)) + tuple(index)]
    return out
