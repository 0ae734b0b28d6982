"""The vector engine's tap-by-tap stores (docs/performance.md "The vector engine", "Taps"): a
real `+=` of a product whose positions are affine in the axes but address cells more than once
(a transposed convolution's `|stride * i + dilation * j - offset|`): per value of the "tap"
axes (`TapForm`), one contraction's part added into a strided slice of the output
(`add_by_taps`), the cells that could differ from the definition's order summed again in it
(`TapTerms`).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import Any, Iterator, Protocol

import numpy as np

from refinterp.lower.common import Refused
from refinterp.lower.vector.access import Guard, Mapped, Read, affine, all_finite
from refinterp.lower.vector.products import LETTERS, contract_reals
from refinterp.lower.vector.space import Box, Mask
from refinterp.lower.vector.sums import gamma, upper_norm
from refinterp.numeric.representation import kind_of



class Stores(Protocol):
    """What a tap-by-tap store needs of the vector engine's `stores.Stores` (which imports this
    module, so it is named by what it does, not imported): the kind of the stored values and
    the sum again in the definition's order."""

    kind: str

    def add_in_order(self, view: np.ndarray, fast: np.ndarray, magnitude: np.ndarray,
                     count: int, terms: Any, depth: Any = None, fast_depth: Any = None,
                     bounded: bool = False, blocked: Any = None) -> None: ...

# below this many iterations per tap value, a scatter in iteration order is cheaper than one
# contraction per tap (add_by_taps)
MIN_ITERATIONS_PER_TAP = 256
# above this many bytes, the parts of all the tap values are not computed at once, but one
# tap value at a time (tap_parts)
TAP_PARTS_BYTES = 2 ** 26


def add_by_taps(stores: Stores, box: Box, target: np.ndarray, positions: list[Any],
                reads: list[Read], valid: Mask) -> bool:
    """A real `+=` of a product of factors (`reads`) at `positions` (unresolved: guards
    kept) that are affine in the axes but address cells more than once, as in a
    transposed convolution `y[|s * i + d * j - p|] += x[i] * w[j]`. A contraction over
    the axes the output lacks gives each value of the tap axes (`TapForm`) its part
    (`tap_parts`), added into a strided slice of the output; the terms' magnitudes are
    bounded per tap value by Cauchy-Schwarz (`_tap_norms`) or, for three factors or more,
    contracted with the sums. A guarded position
    (§2.12: "indices out of the bounds are omitted") keeps only the in-range part of the
    slice; `valid` holds the iterations not skipped otherwise (the condition, guards in
    the value). The additions into a cell come in another order than the definition's
    (BLAS order, then tap by tap), so `add_in_order` sums again in iteration order the
    cells where that could matter. False (nothing written) if the store is not of that
    form."""
    shape, rank = box.shape, len(box.shape)
    factors = [read.value for read in reads]
    if stores.kind != "real" or rank > len(LETTERS) or not all(
            isinstance(f, np.ndarray) and f.ndim == rank and kind_of(f) == "real"
            for f in factors):
        return False
    if valid is not None:
        if not isinstance(valid, np.ndarray) or valid.ndim != rank:
            return False
        factors.append(valid.astype(np.float64))  # a skipped iteration adds 0 * term
    if (valid is not None or any(read.padded for read in reads)) and \
            not all(all_finite(read.value, read.source) for read in reads):
        return False  # 0 * inf is nan: a skipped term must be a zero
    form = TapForm.of(box, positions, target.shape)
    if form is None or math.prod(shape) < MIN_ITERATIONS_PER_TAP * math.prod(
            shape[a] for a in form.taps):
        return False
    places = [found for values in itertools.product(*(range(shape[a]) for a in form.taps))
              if (found := form.place(shape, dict(zip(form.taps, values)))) is not None]
    if not places:
        return True  # every iteration's position is guarded out
    low = [min(p.first(d) for p in places) for d in range(len(form.dims))]
    high = [max(p.last(d) for p in places) for d in range(len(form.dims))]
    region = tuple(slice(lo, hi + 1) for lo, hi in zip(low, high))
    # the sums (index 0, from -0.0: it adds nothing) and their magnitudes (index 1)
    sums = np.empty([2] + [hi + 1 - lo for lo, hi in zip(low, high)])
    sums[0], sums[1] = -0.0, 0.0
    fast, magnitude = sums[0], sums[1]
    hits = form.hits(places, low, fast.shape)  # tap values storing into each cell
    with np.errstate(all="ignore"):
        # the terms' magnitudes: a Cauchy-Schwarz bound per tap value (the product of the
        # factors' norms over the summed axes, `_tap_norms`: no second contraction), or
        # the magnitudes' own contraction (stacked with the sums': one BLAS call and one
        # strided addition per tap value for both) where there is no such bound
        norms = _tap_norms(shape, form, factors, valid is not None)
        for place, part in tap_parts(box, form, factors, places, norms):
            sums[(slice(None),) + place.cells(low)] += part
        if norms is not None:  # the norms' products and their sums over the taps round
            magnitude *= 1.0 + 2.0 * gamma(len(places) + 4)
    count = math.prod(shape[a] for a in range(rank) if a not in form.kept)
    summed = count // math.prod(shape[a] for a in form.taps)  # per tap value and cell
    # roundings on a term's way: the definition's product, then an addition per term of
    # the cell; here the product, the contraction, the repeat, the taps' partial sums
    # and the addition to the current value
    stores.add_in_order(target[region], fast, magnitude, count,
                        TapTerms(form, box, factors, valid is not None, low, fast.shape),
                        depth=hits * summed + len(reads) - 1,
                        fast_depth=len(factors) + summed + hits, bounded=norms is not None)
    return True


def tap_contraction(box: Box, form: TapForm, arrays: list[np.ndarray],
                    magnitudes: bool = True) -> tuple[np.ndarray, list[int]]:
    """The sums of the products of `arrays` (index 0) and, with `magnitudes`, of their
    absolute values (index 1) over the axes neither kept nor taps, as one contraction of
    the factors stacked with their absolute values (a batch of two; of one without
    `magnitudes`): an array [1 or 2, the taps some array uses, the kept axes (dimension
    order)], with the axes after the first. The factor with the last kept axis comes
    last, so that a batched BLAS product lays each tap value's part out with that axis
    contiguous (the placement reads rows of memory, not one cache line per value)."""
    shape = box.shape
    spare = LETTERS[len(shape)]  # the stack's letter
    operands, subscripts = [], []
    for array in arrays:
        axes = [a for a in range(len(shape)) if array.shape[a] > 1]
        squeezed = array.reshape([array.shape[a] for a in axes])
        operands.append(np.stack([squeezed, np.abs(squeezed)]) if magnitudes
                        else squeezed[None])
        subscripts.append(spare + "".join(LETTERS[a] for a in axes))
    used = {a for a in range(len(shape)) if any(LETTERS[a] in s for s in subscripts)}
    out = [a for a in form.taps + form.kept if a in used]
    letters = "".join(LETTERS[a] for a in out)
    ranked = sorted(range(len(operands)), key=lambda k: letters[-1:] in subscripts[k][1:])
    spec = ",".join(subscripts[k] for k in ranked) + "->" + spare + letters
    result = contract_reals(spec, [operands[k] for k in ranked])
    repeat = math.prod(shape[a] for a in range(len(shape)) if a not in used and
                       a not in form.kept and a not in form.taps)
    return (result * float(repeat) if repeat != 1 else result), out


def tap_parts(box: Box, form: TapForm, arrays: list[np.ndarray], places: list[TapPlace],
              norms: list[tuple[np.ndarray, list[int]]] | None
              ) -> Iterator[tuple[TapPlace, np.ndarray]]:
    """Per tap value (`places`), [2, the kept axes (dimension order; extent 1 where no
    array has it)] cut to the kept values that store: the sums of the products of `arrays`
    over the axes neither kept nor taps, and an upper bound of the sums of their absolute
    values: the product of the factors' `norms` (`_tap_norms`) or, without them, those
    sums themselves (the factors stacked with their absolute values, one contraction for
    both). Where all the tap values' parts together are small (`TAP_PARTS_BYTES`), one
    contraction computes them (`tap_contraction`) and the norms' products are one
    product over all of them; else one contraction per tap value, so that only one part
    exists at a time (the factors with the tap fixed: views; the factor with the last
    kept axis last, so that a BLAS product lays the part out with that axis
    contiguous)."""
    shape, rank = box.shape, len(box.shape)
    magnitudes = norms is None
    axes_of = [[a for a in range(rank) if array.shape[a] > 1] for array in arrays]
    used = {a for axes in axes_of for a in axes}
    out = [a for a in form.kept if a in used]

    def stacked(values: np.ndarray, axes: list[int], picks: dict[int, Any]) -> np.ndarray:
        """values [1, axes] and, as a second layer, the norms' product (at `picks` of
        their axes); one array, so that one strided addition places both (measured:
        faster than two additions without the copy, 2.2-2.5 s vs 3.0-3.3 s on the large
        deconvolution)."""
        pieces = []
        for norm, norm_axes in norms:
            piece = norm[tuple(picks.get(a, slice(None)) for a in norm_axes)]
            rest = [a for a in norm_axes if not isinstance(picks.get(a), int)]
            piece = piece.transpose(sorted(range(len(rest)), key=lambda k: axes.index(
                rest[k])))
            pieces.append(piece.reshape([values.shape[1 + k] if a in rest else 1
                                         for k, a in enumerate(axes)]))
        both = np.empty((2,) + values.shape[1:])
        both[0] = values[0]
        if len(pieces) == 1:
            both[1] = pieces[0]
        else:
            np.multiply(pieces[0], pieces[1], out=both[1])
        return both

    if (2 if magnitudes else 1) * 8 * math.prod(
            shape[a] for a in used if a in form.kept or a in form.taps) <= TAP_PARTS_BYTES:
        values, value_axes = tap_contraction(box, form, arrays, magnitudes)
        if not magnitudes:
            values = stacked(values, value_axes, {})
        for place in places:
            part = values[(slice(None),) + tuple(
                place.taps[a] if a in place.taps else slice(*place.ranges[a])
                for a in value_axes)]
            yield place, part.reshape(
                [2] + [place.length(a) if a in value_axes else 1 for a in form.kept])
        return
    spare = LETTERS[rank]  # the stack's letter
    operands = []
    for array, axes in zip(arrays, axes_of):
        squeezed = array.reshape([array.shape[a] for a in axes])
        operands.append(np.stack([squeezed, np.abs(squeezed)]) if magnitudes
                        else squeezed[None])
    last = out[-1] if out else None
    ranked = sorted(range(len(arrays)), key=lambda k: last in axes_of[k])
    spec = ",".join(spare + "".join(LETTERS[a] for a in axes_of[k] if a not in form.taps)
                    for k in ranked) + "->" + spare + "".join(LETTERS[a] for a in out)
    repeat = math.prod(shape[a] for a in range(rank) if a not in used and
                       a not in form.kept and a not in form.taps)
    for place in places:
        # the kept values that store: a slice of the result (a slice of an operand
        # would be copied again for BLAS)
        picks: dict[int, Any] = {a: slice(*place.ranges[a]) for a in out}
        part = contract_reals(spec, [operands[k][(slice(None),) + tuple(
            place.taps[a] if a in place.taps else slice(None) for a in axes_of[k])]
            for k in ranked])[(slice(None),) + tuple(picks[a] for a in out)]
        if repeat != 1:
            part = part * float(repeat)
        picks.update(place.taps)
        if not magnitudes:
            part = stacked(part, out, picks)
        yield place, part.reshape(
            [2] + [place.length(a) if a in used else 1 for a in form.kept])


@dataclass(frozen=True)
class TapDim:
    """The position of one output dimension: origin + sum of coefficient * (position along
    axis a in the box), guarded (`|e|`: outside the extent, the iteration is skipped) or not;
    `kept` is its one non-tap axis, if any."""

    origin: int
    coefficients: dict[int, int]
    guarded: bool
    extent: int
    kept: int | None


@dataclass(frozen=True)
class TapPlace:
    """Where the iterations with the tap axes at the values `taps` store: the range [lo, hi)
    of each kept axis whose positions are inside the output (all of it unless guarded), and
    per output dimension the position of the first of them (the dimension's constant where it
    keeps no axis) and its step (0 where it keeps none)."""

    taps: dict[int, int]
    ranges: dict[int, tuple[int, int]]
    starts: list[int]
    steps: list[int]
    counts: list[int]

    def length(self, axis: int) -> int:
        """How many values of the kept `axis` store."""
        lo, hi = self.ranges[axis]
        return hi - lo

    def first(self, d: int) -> int:
        return min(self.starts[d], self.last_position(d))

    def last(self, d: int) -> int:
        return max(self.starts[d], self.last_position(d))

    def last_position(self, d: int) -> int:
        return self.starts[d] + self.steps[d] * (self.counts[d] - 1)

    def cells(self, low: list[int]) -> tuple:
        """The basic index of these cells in a region of the output starting at `low`."""
        index: list[Any] = []
        for d, (start, step, count) in enumerate(zip(self.starts, self.steps, self.counts)):
            if step == 0:
                index.append(start - low[d])
            else:
                stop = start - low[d] + step * count
                index.append(slice(start - low[d], stop if stop >= 0 else None, step))
        return tuple(index)


@dataclass(frozen=True)
class TapForm:
    """Store positions affine in the axes, split into tap axes and kept axes: with the taps
    fixed, each output dimension's position is a constant or a constant plus a multiple of one
    kept axis, each kept axis in one dimension, so the cells of one tap value are a strided
    slice of the output. The taps are the axes used by several dimensions and, in a dimension
    using several axes (`s * i + d * j`), all but the one of largest extent."""

    dims: tuple[TapDim, ...]
    taps: tuple[int, ...]
    kept: tuple[int, ...]  # in dimension order

    @staticmethod
    def of(box: Box, positions: list[Any], extents: tuple[int, ...]) -> TapForm | None:
        """The form of `positions` (unresolved, guards kept) over `box`, or None when they
        are not affine in the axes, use a remapping guard `|e <> lo : hi|`, or go outside
        the output unguarded (the scatter path reports or skips that)."""
        if len(positions) != len(extents):
            return None
        terms = []
        for p, extent in zip(positions, extents):
            guarded = isinstance(p, Guard)
            if guarded and (p.lower is not None or p.upper is not None):
                return None
            value = p.value if guarded else p
            if isinstance(value, (Mapped, tuple)):
                return None
            term = affine(value, box.shape)
            if term is None:
                return None
            origin, coefficients = term
            if not guarded:  # unguarded: inside the output on every iteration of the box
                low = origin + sum(min(0, c * (box.shape[a] - 1)) for a, c in coefficients.items())
                high = origin + sum(max(0, c * (box.shape[a] - 1))
                                    for a, c in coefficients.items())
                if low < 0 or high >= extent:
                    return None
            terms.append((origin, coefficients, guarded, extent))
        uses: dict[int, int] = {}
        for _, coefficients, _, _ in terms:
            for a in coefficients:
                uses[a] = uses.get(a, 0) + 1
        taps = {a for a, n in uses.items() if n > 1}
        dims = []
        for origin, coefficients, guarded, extent in terms:
            axes = [a for a in coefficients if a not in taps]
            kept = max(axes, key=lambda a: (box.shape[a], a)) if axes else None
            taps.update(a for a in axes if a != kept)
            dims.append(TapDim(origin, coefficients, guarded, extent, kept))
        return TapForm(tuple(dims), tuple(sorted(taps)),
                       tuple(d.kept for d in dims if d.kept is not None))

    def place(self, shape: tuple[int, ...], taps: dict[int, int]) -> TapPlace | None:
        """Where the iterations with the tap axes at `taps` store, or None if a guard skips
        them all."""
        ranges: dict[int, tuple[int, int]] = {}
        starts, steps, counts = [], [], []
        for dim in self.dims:
            base = dim.origin + sum(c * taps[a] for a, c in dim.coefficients.items()
                                    if a != dim.kept)
            if dim.kept is None:
                if not 0 <= base < dim.extent:
                    return None  # only a guarded dimension can be outside (`of`)
                starts.append(base)
                steps.append(0)
                counts.append(1)
                continue
            a, c = dim.kept, dim.coefficients[dim.kept]
            lo, hi = 0, shape[a]
            if dim.guarded:  # keep the x with 0 <= base + c * x <= extent - 1
                first, last = (-base, dim.extent - 1 - base) if c > 0 else \
                    (dim.extent - 1 - base, -base)
                lo, hi = max(lo, -(-first // c)), min(hi, last // c + 1)  # ceil, floor + 1
            if lo >= hi:
                return None
            ranges[a] = (lo, hi)
            starts.append(base + c * lo)
            steps.append(c)
            counts.append(hi - lo)
        return TapPlace(taps, ranges, starts, steps, counts)

    def hits(self, places: list[TapPlace], low: list[int], region: tuple[int, ...]
             ) -> np.ndarray:
        """How many tap values store into each cell of the region of the output of shape
        `region` starting at `low` (an array broadcasting to it). Where no tap axis is in two
        dimensions, the places are every combination of one place per dimension, so the
        count is an outer product of one count per dimension; else it is counted place by
        place."""
        owners = [[a for a in dim.coefficients if a in self.taps] for dim in self.dims]
        if len({a for axes in owners for a in axes}) < sum(len(axes) for axes in owners):
            hits = np.zeros(region, dtype=np.int64)
            for place in places:
                hits[place.cells(low)] += 1
            return hits
        hits = np.ones([1] * len(region), dtype=np.int64)
        for d, axes in enumerate(owners):
            counts = np.zeros(region[d], dtype=np.int64)
            distinct = {tuple(place.taps[a] for a in axes): place for place in places}
            for place in distinct.values():
                counts[place.cells(low)[d]] += 1
            if counts.size and (counts == counts[0]).all():  # the same count everywhere: a
                hits = hits * counts[0]  # factor, not a dimension (fewer cells to bound)
                continue
            hits = hits * counts.reshape([-1 if k == d else 1 for k in range(len(region))])
        return hits

    def terms(self, box: Box, factors: list[np.ndarray], masked: bool, low: list[int],
              region: tuple[int, ...], cells: np.ndarray) -> np.ndarray:
        """The terms added into the cells `cells` (flat indices into the region of the output
        of shape `region` starting at `low`), [cells, width] in iteration order: for each
        value of the axes the output does not keep, where that iteration stores into the
        cell, the product of the factors (the last of them the 0/1 mask if `masked`; a
        masked iteration gives -0.0, which adds nothing); the rows of cells with fewer terms
        than `width` end with -0.0.

        Which tap values store into a cell (and at which values of the kept axes) depends on
        the cell, not on the summed axes, so the cells are grouped by the set of tap values
        reaching them (few sets: one per stride phase and border), and each group's terms
        are gathered as [cells, those taps, summed axes], only real terms. The order is one
        for every cell: an iteration's rank in the box (row-major) is sum(stride_a *
        index_a); in a cell, a kept axis's index is (position - origin - sum(c_t * tap_t)) /
        c_kept, so the rank is a term of the cell plus a linear form of the other axes'
        values, which orders them (`TapTerms`, which a store makes once for all its calls)."""
        return TapTerms(self, box, factors, masked, low, region)(cells)


class TapTerms:
    """The terms of the cells of one tap-by-tap store (`Stores.add_by_taps`), in iteration
    order, for `add_in_order`: called with flat cell indices into the region of the output of
    shape `region` starting at `low`, it gives [cells, width] (`TapForm.terms`). What does not
    depend on the cells (the order of the terms, the factors' layouts) is found once per
    store, on the first call.

    Which tap values store into a cell (and at which values of the kept axes) depends on the
    cell, not on the summed axes, so the cells are grouped by the set of tap values reaching
    them (few sets: one per stride phase and border), and each group's terms are gathered as
    [cells, those taps, summed axes], real terms only: each factor laid out as (kept and tap
    axes, summed axes) — a contiguous copy once the rows gathered outnumber a quarter of its
    cells — and its rows taken by one fancy index. The order is one for every cell: an
    iteration's rank in the box (row-major) is sum(stride_a * index_a); in a cell, a kept
    axis's index is (position - origin - sum(c_t * tap_t)) / c_kept, so the rank is a term of
    the cell plus a linear form `key` of the other axes' values, which orders them. Where the
    summed axes' keys are further apart than the taps' keys spread (a transposed
    convolution: the channel is outer to the taps), that order is summed-major and the
    product is written straight in it (no permutation of the columns)."""

    def __init__(self, form: TapForm, box: Box, factors: list[np.ndarray], masked: bool,
                 low: list[int], region: tuple[int, ...]) -> None:
        self.form, self.factors, self.masked = form, factors, masked
        self.low, self.region = low, region
        shape, rank = box.shape, len(box.shape)
        self.shape = shape
        self.taps = list(form.taps)
        self.summed = [a for a in range(rank) if a not in form.kept and a not in form.taps]
        others = sorted(self.taps + self.summed)
        strides = [math.prod(shape[a + 1:]) for a in range(rank)]
        scale = math.prod(abs(d.coefficients[d.kept]) for d in form.dims if d.kept is not None)
        key = {a: strides[a] * scale for a in others}  # rank * scale, less the cell's term
        for dim in form.dims:
            if dim.kept is not None:
                for a, c in dim.coefficients.items():
                    if a != dim.kept:
                        key[a] -= strides[dim.kept] * c * scale // dim.coefficients[dim.kept]
        if sum(abs(key[a]) * (shape[a] - 1) for a in others) >= 2 ** 62:
            raise Refused("an iteration order too large to compute in int64")
        self.tap_grid = np.indices([shape[a] for a in self.taps]).reshape(
            len(self.taps), math.prod(shape[a] for a in self.taps))  # [taps, T]
        self.sum_shape = [shape[a] for a in self.summed]
        sum_grid = np.indices(self.sum_shape).reshape(len(self.summed),
                                                      math.prod(self.sum_shape))
        self.sum_key = sum((key[a] * sum_grid[k] for k, a in enumerate(self.summed)),
                           np.zeros(sum_grid.shape[1], dtype=np.int64))
        self.tap_key = sum((key[a] * self.tap_grid[k] for k, a in enumerate(self.taps)),
                           np.zeros(self.tap_grid.shape[1], dtype=np.int64))
        # summed-major: the summed keys increase (row-major) by more than the taps' spread
        gaps = np.diff(self.sum_key)
        self.summed_major = bool((gaps > 0).all()) and (
            gaps.size == 0 or int(gaps.min()) > int(np.ptp(self.tap_key)))
        self.layouts: list[tuple[np.ndarray, list[int], tuple[int, ...], bool]] = []
        for array in factors:
            axes = [a for a in range(rank) if array.shape[a] > 1]
            lead = [a for a in axes if a not in self.summed]
            tail = [a for a in axes if a in self.summed]
            squeezed = array.reshape([array.shape[a] for a in axes])
            laid = squeezed.transpose([axes.index(a) for a in lead + tail])
            self.layouts.append((laid, lead, tuple(shape[a] if a in tail else 1
                                                   for a in self.summed), False))
        self.gathered = 0  # rows gathered so far, per factor (for the contiguous copies)

    def __call__(self, cells: np.ndarray) -> np.ndarray:
        shape = self.shape
        taps, tap_grid = self.taps, self.tap_grid
        # per cell and tap value: does it store there, and at which kept index
        coords = np.unravel_index(cells, self.region)
        stores = np.ones((len(cells), tap_grid.shape[1]), dtype=bool)
        kept_index: dict[int, np.ndarray] = {}
        for d, dim in enumerate(self.form.dims):
            rest = (coords[d] + self.low[d] - dim.origin)[:, None]
            for k, a in enumerate(taps):
                c = dim.coefficients.get(a, 0)
                if c:
                    rest = rest - c * tap_grid[k][None, :]
            if dim.kept is None:
                stores &= rest == 0
                continue
            x, remainder = np.divmod(rest, dim.coefficients[dim.kept])
            stores &= (remainder == 0) & (x >= 0) & (x < shape[dim.kept])
            kept_index[dim.kept] = x
        count = math.prod(self.sum_shape)
        reached = stores.any(axis=0)  # the tap values reaching some cell of the chunk
        per_cell = stores.sum(axis=1)
        widest = int(per_cell.max()) if per_cell.size else 0
        self.copy_layouts(int(per_cell.sum()))
        if widest >= 0.75 * int(reached.sum()):
            # (nearly) every cell reached by the same tap values (stride 1): one pass, the
            # others' terms -0.0
            return self.gathered_terms(np.flatnonzero(reached), slice(None), len(cells),
                                       kept_index, stores)
        if stores.shape[1] <= 62:
            pattern = stores.astype(np.int64) @ (np.int64(1) << np.arange(
                stores.shape[1], dtype=np.int64))
            patterns, group = np.unique(pattern, return_inverse=True)
            sets = [stores[np.argmax(group == g)] for g in range(len(patterns))]
        else:
            unique_sets, group = np.unique(stores, axis=0, return_inverse=True)
            sets = list(unique_sets)
        group = group.reshape(-1)
        width = widest * count
        result = None
        for g, chosen in enumerate(sets):
            columns = np.flatnonzero(chosen)
            if columns.size == 0:
                continue
            single = len(sets) == 1
            rows = slice(None) if single else np.flatnonzero(group == g)
            ordered = self.gathered_terms(columns, rows, len(cells) if single else len(rows),
                                          kept_index, None)
            if single and ordered.shape[1] == width:
                return ordered
            if result is None:
                result = np.full((len(cells), width), -0.0)
            result[rows, :ordered.shape[1]] = ordered
        return result if result is not None else np.full((len(cells), max(width, 1)), -0.0)

    def gathered_terms(self, columns: np.ndarray, rows: Any, n: int,
                       kept_index: dict[int, np.ndarray], stores: np.ndarray | None
                       ) -> np.ndarray:
        """[n, columns * summed values]: the terms of the cells `rows` (of the chunk) at the
        tap values `columns`, in iteration order; where `stores` is given, the terms of the
        tap values that do not store into a cell are -0.0 (their kept indices, out of range,
        are clipped for the gathers)."""
        shape, count = self.shape, math.prod(self.sum_shape)
        columns = columns[np.argsort(self.tap_key[columns], kind="stable")]  # by their keys
        index = {a: self.tap_grid[k][columns][None, :] for k, a in enumerate(self.taps)}
        for a, x in kept_index.items():
            picked = np.broadcast_to(x, (x.shape[0], self.tap_grid.shape[1]))[rows][:, columns]
            index[a] = picked if stores is None else np.clip(picked, 0, shape[a] - 1)
        gathered = []
        for laid, lead, tail_shape, _ in self.layouts:
            picked = laid[tuple(index[a] for a in lead)] if lead else laid[None, None]
            picked = picked.reshape(picked.shape[:2] + tail_shape)
            gathered.append(np.broadcast_to(picked, picked.shape[:2] + tuple(
                self.sum_shape)).reshape(picked.shape[:2] + (count,)))
        mask = gathered.pop() if self.masked else None
        if self.summed_major:  # [cells, summed, taps]: the iteration order, written in it
            ordered = np.empty((n, count, columns.size))
            product = ordered.transpose(0, 2, 1)
        else:
            product = np.empty((n, columns.size, count))
        if len(gathered) == 1:
            product[...] = gathered[0]
        else:
            np.multiply(gathered[0], gathered[1], out=product)
            for more in gathered[2:]:
                product *= more
        if mask is not None:
            np.copyto(product, -0.0, where=np.broadcast_to(mask, product.shape) == 0)
        if stores is not None:
            np.copyto(product, -0.0, where=np.logical_not(stores[rows][:, columns])[:, :, None])
        if self.summed_major:
            return ordered.reshape(n, -1)
        order = np.argsort((self.tap_key[columns][:, None] + self.sum_key[None, :]).reshape(-1),
                           kind="stable")
        return np.take(product.reshape(n, -1), order, axis=1)

    def copy_layouts(self, rows: int) -> None:
        """Once the rows gathered from a factor outnumber a quarter of its cells, gather from
        a contiguous copy of its layout (a row is then one run of memory, not one read per
        summed value from a strided view)."""
        self.gathered += rows
        for f, (laid, lead, tail_shape, copied) in enumerate(self.layouts):
            if not copied and self.gathered * math.prod(tail_shape) * 4 >= laid.size:
                self.layouts[f] = (np.ascontiguousarray(laid), lead, tail_shape, True)


def _tap_norms(shape: tuple[int, ...], form: TapForm, factors: list[np.ndarray],
               masked: bool) -> list[tuple[np.ndarray, list[int]]] | None:
    """For a tap-by-tap store (`Stores.add_by_taps`) of one or two factors (besides the 0/1
    mask, whose magnitude is at most 1): per factor, an upper bound of its 2-norm over the
    summed axes (neither kept nor taps; an axis it lacks repeats it) at each value of its
    other axes, with those axes. By Cauchy-Schwarz, the magnitude sum of one tap value's
    terms in a cell is at most the product of the two norms there (one factor: sqrt(n)
    times its norm). None for three factors or more."""
    if masked:
        factors = factors[:-1]
    if not 1 <= len(factors) <= 2:
        return None
    rank = len(shape)
    summed = [a for a in range(rank) if a not in form.kept and a not in form.taps
              and shape[a] > 1]
    n = math.prod(shape[a] for a in summed)
    norms = []
    for array in factors:
        axes = [a for a in range(rank) if array.shape[a] > 1]
        sub = "".join(LETTERS[a] for a in axes)
        keep = [a for a in axes if a not in summed]
        squeezed = array.reshape([array.shape[a] for a in axes])
        squares = np.einsum(f"{sub},{sub}->" + "".join(LETTERS[a] for a in keep),
                            squeezed, squeezed)
        repeat = math.prod(shape[a] for a in summed if a not in axes)
        if repeat != 1:
            squares = squares * float(repeat)
        norm = upper_norm(squares, n)
        if len(factors) == 1:
            norm = norm * math.sqrt(n)
        norms.append((np.asarray(norm), keep))
    return norms


