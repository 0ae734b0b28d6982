"""Small pictures as inline SVG, for the HTML report (docs/harness.md, "The HTML report"):
a heat map of error ratios with the worst cell marked, a grey-scale image of values, a
red-blue image of signed differences, and a bar chart. Plain SVG text: no picture library,
no network, nothing but numbers and escaped text in the markup."""

from __future__ import annotations

import math
from html import escape
from typing import Callable, Sequence

CELL = 8          # pixels per cell, shrunk for a large grid
MAX_SIDE = 384    # pixels of a picture's longer side, at most
Grid = Sequence[Sequence[float | None]]


NON_FINITE = 1e299  # a ratio this large stands for a non-finite mismatch (figures.CAP)


def ratio_colour(ratio: float | None, decades: float = 6.0) -> str:
    """The colour of an error ratio (error / allowed): shades of green up to 1 (passes),
    yellow just above 1 to dark red at 10^decades and beyond (log scale); purple for a
    non-finite mismatch; grey for no value."""
    if ratio is None or math.isnan(ratio):
        return "#999999"
    if ratio >= NON_FINITE:
        return "#6c2a8c"
    if ratio <= 1.0:
        light = 0.92 - 0.35 * max(0.0, ratio)
        return _rgb(0.55 * light, light, 0.6 * light)
    t = min(1.0, math.log10(ratio) / max(decades, 1e-9))
    return _rgb(1.0 - 0.45 * t, 0.85 * (1.0 - t), 0.1 * (1.0 - t))


def decades_of(grid: Grid) -> float:
    """The colour scale of a heat map: log10 of its greatest finite ratio, at least 1."""
    finite = [v for row in grid for v in row if v is not None and 1.0 < v < NON_FINITE]
    return max(1.0, math.log10(max(finite))) if finite else 1.0


def _rgb(red: float, green: float, blue: float) -> str:
    return "#" + "".join(f"{round(255 * min(1.0, max(0.0, c))):02x}" for c in (red, green, blue))


def _cell_size(grid: Grid) -> int:
    longest = max(len(grid), max((len(row) for row in grid), default=1), 1)
    return max(2, min(CELL * 3, MAX_SIDE // longest))


def _svg(width: int, height: int, body: list[str], label: str) -> str:
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
            f'viewBox="0 0 {width} {height}" role="img" aria-label="{escape(label)}">'
            f'<title>{escape(label)}</title>{"".join(body)}</svg>')


def _cells(grid: Grid, colour: Callable[[float | None], str]) -> tuple[list[str], int, int, int]:
    size = _cell_size(grid)
    body = []
    for r, row in enumerate(grid):
        for c, value in enumerate(row):
            body.append(f'<rect x="{c * size}" y="{r * size}" width="{size}" height="{size}" '
                        f'fill="{colour(value)}"><title>[{r}, {c}]: {_number(value)}</title>'
                        f'</rect>')
    width = size * max((len(row) for row in grid), default=1)
    return body, size, width, size * max(len(grid), 1)


def heat_map(grid: Grid, worst: Sequence[int] | None, label: str) -> str:
    """An error-ratio heat map (`ratio_colour` on the scale `decades_of` the grid), the
    worst cell framed in blue."""
    decades = decades_of(grid)
    body, size, width, height = _cells(grid, lambda value: ratio_colour(value, decades))
    if worst is not None:
        r, c = worst
        body.append(f'<rect class="worst" x="{c * size + 0.75}" y="{r * size + 0.75}" '
                    f'width="{max(size - 1.5, 1)}" height="{max(size - 1.5, 1)}" fill="none" '
                    f'stroke="#1040ff" stroke-width="1.5"><title>worst element</title></rect>')
    return _svg(width, height, body, label)


def value_image(grid: Grid, label: str) -> str:
    """Values as grey levels, black at the grid's least to white at its greatest."""
    low, high = _range(grid)

    def grey(value: float | None) -> str:
        if value is None:
            return "#ff00ff"
        level = 0.5 if high == low else (value - low) / (high - low)
        return _rgb(level, level, level)
    body, _, width, height = _cells(grid, grey)
    return _svg(width, height, body, label)


def difference_image(grid: Grid, label: str) -> str:
    """Signed differences: white at 0, red above, blue below, full at the largest magnitude."""
    low, high = _range(grid)
    scale = max(abs(low), abs(high)) or 1.0

    def colour(value: float | None) -> str:
        if value is None:
            return "#ff00ff"
        t = min(1.0, abs(value) / scale)
        return _rgb(1.0, 1.0 - t, 1.0 - t) if value > 0 else _rgb(1.0 - t, 1.0 - t, 1.0)
    body, _, width, height = _cells(grid, colour)
    return _svg(width, height, body, label)


def bar_chart(bars: Sequence[Sequence[object]], label: str) -> str:
    """A small bar chart of [label, count] pairs (the ULP histogram), counts written above."""
    width, height, gap, base = 56, 90, 6, 70
    most = max((int(count) for _, count in bars), default=0) or 1  # type: ignore[call-overload]
    body = []
    for k, (name, count) in enumerate(bars):
        bar = round(55 * int(count) / most)  # type: ignore[call-overload]
        x = k * (width + gap)
        body.append(f'<rect x="{x}" y="{base - bar}" width="{width}" height="{bar}" '
                    f'fill="#c0392b"/>'
                    f'<text x="{x + width / 2}" y="{base - bar - 3}" font-size="11" '
                    f'text-anchor="middle">{int(count)}</text>'  # type: ignore[call-overload]
                    f'<text x="{x + width / 2}" y="{base + 14}" font-size="11" '
                    f'text-anchor="middle">{escape(str(name))}</text>')
    return _svg(len(bars) * (width + gap), height, body, label)


def _range(grid: Grid) -> tuple[float, float]:
    values = [v for row in grid for v in row if v is not None and math.isfinite(v)]
    return (min(values), max(values)) if values else (0.0, 0.0)


def _number(value: float | None) -> str:
    return "no value" if value is None else f"{value:.4g}"
