"""Stores of the vector engine (docs/architecture.md, "The vector engine", "Stores"): how the
values of one box reach the output.

Positions that are each a constant or a distinct axis ("plain"), or affine in the axes with
every cell addressed once, give a view of the output: `=` is then a view assignment (a freshly
computed array covering the whole output simply becomes the output), an update a reduction over
the axes missing from the output, and `+=` of a product one contraction (`np.tensordot` for two
matrices or vectors, else `np.einsum` with a cached path). A real `+=` of a product whose
positions are affine in the axes but address cells more than once (a transposed convolution's
`|stride * i + dilation * j - offset|`) runs tap by tap (`add_by_taps`): for each value of the
"tap" axes, one contraction added into a strided slice of the output. Any other position
pattern is a scatter in iteration order: `ufunc.at` for updates (unbuffered and ordered),
last-write-wins for `=` / `:=`.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import Any, Iterator

import numpy as np

from refinterp.core.cache import BoundedCache
from refinterp.lower.plan import NEUTRAL, UPDATE_OPS, Formula, start_value
from refinterp.lower.vector_access import (Guard, Mapped, Read, affine, all_finite, plain,
                                           selection)
from refinterp.lower.vector_space import Box, Fallback, Mask
from refinterp.language.values import NULL
from refinterp.numeric import array_rules as A
from refinterp.numeric import rules
from refinterp.numeric.representation import kind_of

LETTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"  # einsum subscripts
# engines.difference's tolerance (not imported: engines imports this module's users)
REAL_RTOL, REAL_ATOL = 1e-9, 1e-12
UNIT = 2.0 ** -53  # unit roundoff of float64
TERMS_PER_CHUNK = 2 ** 20  # terms summed in iteration order at once (add_in_order)
# below this many iterations per tap value, a scatter in iteration order is cheaper than one
# contraction per tap (add_by_taps)
MIN_ITERATIONS_PER_TAP = 256
# above this many bytes, the parts of all the tap values are not computed at once, but one
# tap value at a time (Stores.tap_parts)
TAP_PARTS_BYTES = 2 ** 26
UFUNCS = {"+=": np.add, "*=": np.multiply, "&=": np.logical_and, "|=": np.logical_or,
          "<=": np.minimum, ">=": np.maximum}


class Stores:
    """Writes one formula's values into its output, box by box.

    `written` (only when boxes run out of iteration order and the formula assigns) accumulates,
    over the boxes of the run, the cells assigned so far: a cell assigned twice would make the
    result depend on the box order, so the formula falls back."""

    def __init__(self, formula: Formula, kind: str, profile: rules.Profile,
                 arrays: dict[str, Any], reads_output: bool, check_rewrites: bool,
                 fresh: bool = False) -> None:
        self.formula, self.op, self.kind, self.profile = formula, formula.op, kind, profile
        self.arrays, self.reads_output = arrays, reads_output
        # the output was allocated without its zeros (vector.fresh_outputs): they are
        # written before the first store that does not assign every cell
        self.fresh = fresh
        # pack item index (None: the output itself) -> its cells written so far
        self.written: dict[int | None, np.ndarray] | None = {} if check_rewrites else None

    def check_kind(self, value: Any) -> np.ndarray:
        if value is NULL or isinstance(value, (tuple, Guard)):
            raise Fallback("the value to store is not a single number")
        array = A.as_array(value)
        if kind_of(array) != self.kind:
            raise Fallback(f"a {kind_of(array)} value for a {self.kind} output")
        return array

    def output_view(self, box: Box, target: np.ndarray, positions: list[Any]
                    ) -> tuple[np.ndarray, list[int], bool] | None:
        """A writable view of the cells the positions address, with one dimension per output
        axis ("kept" axes), if the positions are constants and distinct plain axes (a slice),
        or affine in the axes with every cell addressed once (a strided view, e.g.
        `g * m + i`); else None. The flag says whether the view is a plain slice."""
        found = plain(box, positions)
        if found is not None:
            view = target[selection(box, found) + (Ellipsis,)]  # a view, even of one cell
            return view, [v for k, v in found if k == "axis"], True
        if not target.flags.c_contiguous:
            return None
        flat: dict[int, int] = {}
        offset = 0
        element_strides = [st // target.itemsize for st in target.strides]
        for p, stride in zip(positions, element_strides):
            term = affine(p, box.shape)
            if term is None:
                return None
            origin, coefficients = term
            offset += origin * stride
            for a, c in coefficients.items():
                flat[a] = flat.get(a, 0) + c * stride
        kept = sorted(a for a, c in flat.items() if c != 0)
        reach = 0  # every cell once: each coefficient exceeds what the smaller ones span
        for a in sorted(kept, key=lambda a: abs(flat[a])):
            if abs(flat[a]) <= reach:
                return None
            reach += abs(flat[a]) * (box.shape[a] - 1)
        view = np.lib.stride_tricks.as_strided(
            target.reshape(-1)[offset:], shape=[box.shape[a] for a in kept],
            strides=[flat[a] * target.itemsize for a in kept])
        return view, kept, False

    def store(self, box: Box, target: np.ndarray, item: int | None, positions: list[Any],
              value: Any, valid: Mask) -> None:
        """Write `value` (over the box) at `positions` of `target` (the output, or its pack
        item `item`), on the `valid` iterations."""
        value = self.check_kind(value)
        op = self.op
        out = self.output_view(box, target, positions)
        kept = out[1] if out is not None else []
        reduced = [a for a in range(len(box.shape)) if a not in kept and box.shape[a] > 1]
        if out is not None and op in ("=", ":=") and not reduced and self.written is None:
            view, kept, is_slice = out
            if is_slice and self.adopt(box, target, kept, value, valid):
                self.fresh = False
                return
            new = _arrange(box, value, kept)
            if valid is not None or view.size != target.size:  # not every cell assigned
                self.initialise(target)
            if valid is not None:
                new = np.where(_arrange(box, valid, kept), new, view)
            view[...] = new
            self.fresh = False
            return
        self.initialise(target)
        if self.reads_output:
            raise Fallback("the output position is not plain in the kept axes")
        elif op in ("=", ":="):
            self.scatter_last(box, target, item, positions, value, valid)
        elif out is not None:
            self.reduce(box, out[0], kept, reduced, value, valid)
        else:
            self.scatter_update(box, target, positions, value, valid)

    def initialise(self, target: np.ndarray) -> None:
        """The zeros of a fresh output, before a store that does not assign every cell."""
        if self.fresh:
            target.fill(0)
            self.fresh = False

    def adopt(self, box: Box, target: np.ndarray, kept: list[int], value: np.ndarray,
              valid: Mask) -> bool:
        """Make a freshly computed value array the output itself, instead of copying it in,
        when it covers the whole output in its layout (the common `y[i..] = f(x[i..])`)."""
        if valid is not None or self.formula.item is not None or \
                self.arrays[self.formula.output] is not target or \
                value.shape != box.shape or not value.flags.owndata or \
                not value.flags.c_contiguous or value.dtype != target.dtype or \
                kept != sorted(kept) or [box.shape[a] for a in kept] != list(target.shape) \
                or math.prod(box.shape) != target.size:
            return False
        self.arrays[self.formula.output] = value.reshape(target.shape)
        return True

    def scatter_last(self, box: Box, target: np.ndarray, item: int | None,
                     positions: list[Any], value: np.ndarray, valid: Mask) -> None:
        """`=` / `:=` in iteration order: the last write to a cell wins."""
        flat, values = _flat_positions(box, target, positions, value, valid)
        unique, first_from_end = np.unique(flat[::-1], return_index=True)
        last = len(flat) - 1 - first_from_end
        if self.written is not None:
            written = self.written.setdefault(item, np.zeros(target.size, dtype=bool))
            if len(unique) != len(flat) or written[unique].any():
                raise Fallback("an assignment writes a cell twice out of iteration order")
            written[unique] = True
        target.reshape(-1)[unique] = values[last]

    def scatter_update(self, box: Box, target: np.ndarray, positions: list[Any],
                       value: np.ndarray, valid: Mask) -> None:
        """An update at computed positions, applied in iteration order (`ufunc.at`)."""
        op = self.op
        flat, values = _flat_positions(box, target, positions, value, valid)
        view = target.reshape(-1)
        if self.kind == "int":
            if op != "+=" and op not in ("<=", ">="):
                raise Fallback(f"an int '{op}' scatter")
            bound = np.abs(values.astype(np.float64)).sum() + \
                (np.abs(view.astype(np.float64)).max() if view.size else 0.0)
            if op == "+=" and bound >= A.SAFE_INT:
                raise Fallback("an int sum may leave int64")
        if op in ("<=", ">=") and self.kind == "real" and self.profile.min_max_nan != "propagate":
            keep = ~np.isnan(values)  # std::min/max ignore a NaN right operand
            flat, values = flat[keep], values[keep]
        with np.errstate(all="ignore"):  # IEEE results (nan, inf) are the semantics here
            UFUNCS[op].at(view, flat, values)

    def reduce(self, box: Box, view: np.ndarray, kept: list[int], reduced: list[int],
               value: np.ndarray, valid: Mask) -> None:
        """An update of the output cells of `view`: reduce over the axes the output lacks,
        then combine with the current values by the update operator."""
        op = self.op
        full = np.broadcast_to(value, box.shape)
        if valid is not None:
            full = np.where(valid, full, start_value(NEUTRAL[op], self.kind))
        order = kept + reduced
        others = [a for a in range(len(box.shape)) if a not in order]
        laid = full.transpose(order + others).reshape([box.shape[a] for a in kept] + [-1])
        with np.errstate(all="ignore"):
            if self.kind == "int" and op in ("+=", "*="):
                magnitude = np.abs(laid.astype(np.float64))
                bound = magnitude.sum(axis=-1) if op == "+=" else magnitude.prod(axis=-1)
                if np.any(bound >= A.SAFE_INT):
                    raise Fallback(f"an int '{op}' reduction may leave int64")
            if op == "+=" and self.kind == "real":
                count = laid.shape[-1]
                flat_terms = laid.reshape(-1, count)
                # the magnitude sum(|t|) bounded by Cauchy-Schwarz from the same sum of squares
                # as one pass without a temporary; cells it does not settle get the exact one
                squares = np.einsum("...k,...k->...", laid, laid)
                bound = math.sqrt(count) * _upper_norm(squares, count)
                self.add_in_order(view, laid.sum(axis=-1), bound, count,
                                  lambda cells: flat_terms[cells], bounded=True)
                return
            if op == "*=" and self.kind == "real":
                # a product's order decides where it overflows or underflows: multiply in
                # iteration order, starting from the current value, as the definition does
                stack = np.concatenate([np.asarray(view)[..., None], laid], axis=-1)
                view[...] = np.multiply.accumulate(stack, axis=-1)[..., -1]
                return
            if op == "+=":
                result = laid.sum(axis=-1)
            elif op == "*=":
                result = laid.prod(axis=-1)
            elif op == "&=":
                result = laid.all(axis=-1)
            elif op == "|=":
                result = laid.any(axis=-1)
            elif self.kind == "real" and self.profile.min_max_nan != "propagate":
                result = (np.fmin if op == "<=" else np.fmax).reduce(laid, axis=-1)
            else:
                result = (np.minimum if op == "<=" else np.maximum).reduce(laid, axis=-1)
        self.combine(view, result)

    def add_in_order(self, view: np.ndarray, fast: np.ndarray, magnitude: np.ndarray,
                     count: int, terms: Any, depth: Any = None, fast_depth: Any = None,
                     bounded: bool = False, blocked: "BlockedSum | None" = None) -> None:
        """view <- view + the sum of `count` terms per cell, as the definition adds them (`fast`
        and `magnitude`, fresh arrays of the caller, may be written over): one
        at a time in iteration order, starting from the current value. `fast` is the sum in
        another order (pairwise, BLAS), `magnitude` the sum of the terms' magnitudes. A sum's
        error is at most gamma(k) * (|view| + magnitude) where k bounds the roundings on any
        term's way into the sum (its product, then the additions): `depth` for the
        definition's order, `fast_depth` for the fast one (per cell or for all; both default
        to count + 1, which bounds any order of `count` products of two factors). Where the
        two errors together fit within half the engines' tolerance, the fast sum stands; the
        other cells (a cancellation, an infinity, a nan) are summed again in order,
        `terms(cells)` giving the [cells, count] terms of the flat cell indices `cells` (a
        term that is no term of the cell may be -0.0, which adds nothing to any value), a
        chunk of cells at a time.

        `bounded`: `magnitude` is only an upper bound of the terms' magnitude sum, cheaper to
        compute (`_upper_norm`). A cell whose error fits with it fits with the exact sum too;
        for the others the exact magnitude is taken from `terms` before deciding, so the cells
        summed again are exactly those whose error bound with the exact magnitude does not
        fit: the same contract, the exact magnitude computed only where it matters.

        `blocked`: the sum was computed block by block (`BlockedSum`): its value (the current
        value included) replaces `view + fast`; its order's roundings (a term's product, the
        block's sum, the additions of the block sums) are at most count + factors + blocks;
        a cell the gamma bound leaves open gets the blocks' far tighter bound, then the gamma
        bound with the exact magnitude (valid for any order), before it is summed again."""
        depth = count + 1 if depth is None else depth
        fast_depth = depth if fast_depth is None else fast_depth
        if blocked is not None:
            fast_depth = max(fast_depth, count + blocked.factors + len(blocked.parts))
        chunk = max(1, TERMS_PER_CHUNK // max(1, count))
        with np.errstate(all="ignore"):
            factor = _gamma(depth) + _gamma(fast_depth)
            # `fast` and `magnitude` are the caller's fresh arrays: written over where they
            # can be (no new array of the cells' size: each costs its pages' first touch)
            if blocked is not None:
                new = blocked.total
            elif _reusable(fast, view.shape):
                new = np.add(view, fast, out=fast)
            else:
                new = np.asarray(np.add(view, fast), dtype=np.float64)  # a new array
            if view.any():  # (|view| + magnitude) * factor; a zero start adds nothing
                error = np.abs(view)
                error += magnitude
                error *= factor
            elif blocked is None and _reusable(magnitude, new.shape):
                error = np.multiply(magnitude, factor, out=magnitude)
            else:
                error = np.multiply(magnitude, factor)
            bad = _unsettled(error, new)
            if bad.size and blocked is not None:  # the blocks' tighter bound, where needed
                bad = bad[_unsettled(blocked.error(bad), new.reshape(-1)[bad])]
            if bad.size:
                starts = np.ascontiguousarray(view, dtype=np.float64).reshape(-1)
                flat_factor = np.broadcast_to(factor, new.shape).reshape(-1)
                fast_of_bad = new.reshape(-1)[bad]
                # an infinite fast sum never fits (`_unsettled`): -1 is below any bound
                allowed = np.where(np.isfinite(fast_of_bad),
                                   0.5 * (REAL_ATOL + REAL_RTOL * np.abs(fast_of_bad)), -1.0)
                for first in range(0, bad.size, chunk):
                    cells = bad[first:first + chunk]
                    terms_of = np.asarray(terms(cells)).reshape(cells.size, -1)
                    if bounded:  # the exact magnitude, where the upper bound did not do
                        fits = flat_factor[cells] * (np.abs(starts[cells]) + np.abs(
                            terms_of).sum(axis=1)) <= allowed[first:first + chunk]
                        cells, terms_of = cells[~fits], terms_of[~fits]
                    stack = np.concatenate([starts[cells][:, None], terms_of], axis=1)
                    new.reshape(-1)[cells] = np.add.accumulate(stack, axis=1)[:, -1]
        view[...] = new

    def combine(self, view: np.ndarray, result: Any) -> None:
        """view <- view (op) result, by the update operator's pairwise rule."""
        if self.kind == "real" and self.op in ("+=", "*="):
            ufunc = np.add if self.op == "+=" else np.multiply
            with np.errstate(all="ignore"):  # inf - inf, 0 * inf: NaN, as IEEE says
                ufunc(view, result, out=view)  # IEEE + and *: rules.binary's real rule
            return
        try:
            view[...] = A.binary(UPDATE_OPS[self.op], view, result, self.profile)
        except A.Deferred as why:
            raise Fallback(why.reason) from None

    def contract(self, box: Box, view: np.ndarray, kept: list[int], reads: list[Read],
                 valid: Mask) -> bool:
        """`+=` of a product of factors (`reads`) into the cells of `view` as one contraction;
        False if not applicable."""
        shape = box.shape
        factors = [read.value for read in reads]
        arrays = [f for f in factors if isinstance(f, np.ndarray) and f.ndim == len(shape)]
        if len(arrays) != len(factors) or any(kind_of(f) != self.kind for f in arrays):
            return False
        if (valid is not None or any(read.padded for read in reads)) and self.kind == "real":
            # 0 * inf is nan: a skipped iteration (masked, or reading padding) must contribute
            # nothing, so every factor must be finite; a strided view is checked by its base
            if not all(all_finite(read.value, read.source) for read in reads):
                return False
        if valid is not None:
            arrays.append(valid.astype(arrays[0].dtype))
        if len(shape) > len(LETTERS):
            return False
        operands, subscripts, present = [], [], set()
        for array in arrays:
            axes = [a for a in range(array.ndim) if array.shape[a] > 1]
            operands.append(array.reshape([array.shape[a] for a in axes]))
            subscripts.append("".join(LETTERS[a] for a in axes))
            present.update(axes)
        out_axes = [a for a in kept if a in present]
        spec = ",".join(subscripts) + "->" + "".join(LETTERS[a] for a in out_axes)
        repeat = math.prod(shape[a] for a in range(len(shape))
                           if a not in present and a not in kept)
        rest = [a for a in range(len(shape)) if a not in kept]  # summed, in iteration order
        count = math.prod(shape[a] for a in rest)
        # blocking a plain matrix product trades one BLAS call for einsum's split path: only
        # for long sums; einsum's own contractions (convolutions) cost about the same split
        least = MIN_BLOCKED_SUM_TERMS if len(operands) == 1 else MIN_BLOCKED_TERMS \
            if _tensordot_axes(spec, operands) is not None else MIN_BLOCKED_EINSUM_TERMS
        blocks = _blocks(shape, rest, present, least) \
            if self.kind == "real" and repeat == 1 else None
        with np.errstate(all="ignore"):
            if self.kind == "int":
                bound = np.einsum(spec, *[np.abs(o.astype(np.float64)) for o in operands])
                if np.any(bound * repeat >= A.SAFE_INT):
                    raise Fallback("an int contraction may leave int64")
            if blocks is not None:  # the block sums
                parts = _block_sums(spec, operands, subscripts, *blocks)
                result = parts[0]  # (shape only: the blocked sum is BlockedSum's)
            else:
                result = _contract(spec, operands) if self.kind == "real" else np.einsum(
                    spec, *operands, optimize=_einsum_path(spec, operands))
            if repeat != 1:
                result = result * (repeat if self.kind == "int" else float(repeat))
        kept_shape = [shape[a] for a in kept]
        result = _over(result, [shape[a] if a in present else 1 for a in kept], kept_shape)
        if self.kind != "real":
            self.combine(view, result)
            return True
        with np.errstate(all="ignore"):
            magnitude = _magnitude_bound(spec, operands, shape, present)
            bounded = magnitude is not None
            if magnitude is None:
                absolute = [np.abs(o) for o in operands]  # the terms' magnitudes, the same way
                magnitude = _tensordot(spec, absolute)
                if magnitude is None:
                    magnitude = np.einsum(spec, *absolute,
                                          optimize=_einsum_path(spec, absolute))
            if repeat != 1:
                magnitude = magnitude * float(repeat)
        magnitude = _over(magnitude, [shape[a] if a in present else 1 for a in kept],
                          kept_shape)
        blocked = None
        if blocks is not None:
            inner = count // shape[blocks[0]]
            blocked = BlockedSum.of(
                view, [np.broadcast_to(part.reshape(
                    [shape[a] if a in present else 1 for a in kept]), kept_shape)
                    for part in parts],
                [(hi - lo) * inner for lo, hi in blocks[1]], magnitude, len(arrays))

        def terms(cells: np.ndarray) -> np.ndarray:
            """The product terms of the flat kept cells `cells`, in iteration order: each
            factor laid out as (kept axes, summed axes) and its rows of those cells gathered."""
            coords = np.unravel_index(cells, kept_shape) if kept else ()
            product = None
            for array in arrays:
                laid = array.transpose(kept + rest)
                if any(array.shape[a] > 1 for a in kept):
                    picked = laid[tuple(coords[p] if array.shape[a] > 1 else 0
                                        for p, a in enumerate(kept))]
                else:  # the same row for every cell
                    picked = laid[(0,) * len(kept)][None]
                product = picked if product is None else product * picked
            return np.broadcast_to(product, [len(cells)] + [shape[a] for a in rest])

        self.add_in_order(view, result, magnitude, count, terms, bounded=bounded,
                          blocked=blocked)
        return True

    def add_by_taps(self, box: Box, target: np.ndarray, positions: list[Any],
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
        if self.kind != "real" or rank > len(LETTERS) or not all(
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
            for place, part in self.tap_parts(box, form, factors, places, norms):
                sums[(slice(None),) + place.cells(low)] += part
            if norms is not None:  # the norms' products and their sums over the taps round
                magnitude *= 1.0 + 2.0 * _gamma(len(places) + 4)
        count = math.prod(shape[a] for a in range(rank) if a not in form.kept)
        summed = count // math.prod(shape[a] for a in form.taps)  # per tap value and cell
        # roundings on a term's way: the definition's product, then an addition per term of
        # the cell; here the product, the contraction, the repeat, the taps' partial sums
        # and the addition to the current value
        self.add_in_order(target[region], fast, magnitude, count,
                          TapTerms(form, box, factors, valid is not None, low, fast.shape),
                          depth=hits * summed + len(reads) - 1,
                          fast_depth=len(factors) + summed + hits, bounded=norms is not None)
        return True

    @staticmethod
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
        result = _contract(spec, [operands[k] for k in ranked])
        repeat = math.prod(shape[a] for a in range(len(shape)) if a not in used and
                           a not in form.kept and a not in form.taps)
        return (result * float(repeat) if repeat != 1 else result), out

    @staticmethod
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
            values, value_axes = Stores.tap_contraction(box, form, arrays, magnitudes)
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
            part = _contract(spec, [operands[k][(slice(None),) + tuple(
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
            raise Fallback("an iteration order too large to compute in int64")
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
        norm = _upper_norm(squares, n)
        if len(factors) == 1:
            norm = norm * math.sqrt(n)
        norms.append((np.asarray(norm), keep))
    return norms


MIN_BLOCKED_TERMS = 1000  # a shorter sum is not blocked: gamma(n) bounds it well enough
MIN_BLOCKED_EINSUM_TERMS = 256  # the same for a contraction einsum computes anyway
# a plain sum (one operand): its gamma(n) test with the Cauchy-Schwarz magnitude leaves
# about 1 % of random cells open at 1000 terms, 5 % at 2048; blocking costs a third more
MIN_BLOCKED_SUM_TERMS = 2048
BLOCKS = 16  # at most this many blocks; about sqrt(count) / 4 of them below that


def _blocks(shape: tuple[int, ...], rest: list[int], present: set[int],
            least: int = MIN_BLOCKED_TERMS) -> tuple[int, list[tuple[int, int]]] | None:
    """How a real contraction's sum is cut into blocks (`BlockedSum`): ranges of its outermost
    summed axis (contiguous runs of the iteration order), about sqrt(count) / 4 of them, at
    most `BLOCKS` (more, shorter blocks bound the error more tightly but cost more passes over
    the cells); None for a sum of fewer than `least` terms, an outermost axis no
    operand has (a repeated term), or one block."""
    rest = [a for a in rest if shape[a] > 1]  # an axis of extent 1 orders nothing
    if not rest or rest[0] not in present or len(present) >= len(LETTERS):
        return None
    count = math.prod(shape[a] for a in rest)
    extent = shape[rest[0]]
    if count < least:
        return None
    # more blocks bound more tightly (fewer cells summed again) but each costs a few passes
    # over the cells: about sqrt(count) / 4 of them, at least 2 and at most BLOCKS
    blocks = min(BLOCKS, max(2, round(math.sqrt(count) / 4)))
    step = max(1, -(-extent // blocks))
    if step >= extent:
        return None
    return rest[0], [(lo, min(lo + step, extent)) for lo in range(0, extent, step)]


def _block_sums(spec: str, operands: list[np.ndarray], subscripts: list[str], axis: int,
                spans: list[tuple[int, int]]) -> list[np.ndarray]:
    """The contraction `spec` of `operands` restricted to each range `spans` of the summed
    `axis`: the blocks of equal length as one contraction with the axis split in two (the
    block number kept: one BLAS call over all of them, no copy of a strided block), the
    shorter last block, if any, as another."""
    letter = LETTERS[axis]
    spare = next(c for c in LETTERS if c not in spec)  # the block number's letter
    step = spans[0][1] - spans[0][0]
    whole = [span for span in spans if span[1] - span[0] == step]
    end = whole[-1][1]
    inputs, out = spec.split("->")
    split_operands, split_subscripts = [], []
    for operand, sub in zip(operands, subscripts):
        if letter in sub:
            k = sub.index(letter)
            index = [slice(None)] * operand.ndim
            index[k] = slice(0, end)
            part = operand[tuple(index)]
            operand = part.reshape(part.shape[:k] + (len(whole), step) + part.shape[k + 1:])
            sub = sub[:k] + spare + sub[k:]
        split_operands.append(operand)
        split_subscripts.append(sub)
    split_spec = ",".join(split_subscripts) + "->" + spare + out
    sums = np.einsum(split_spec, *split_operands,
                     optimize=_einsum_path(split_spec, split_operands))
    parts = list(sums)
    if len(whole) < len(spans):
        lo, hi = spans[-1]
        parts.append(_contract(spec, [_block_of(o, sub, letter, (lo, hi))
                                      for o, sub in zip(operands, subscripts)]))
    return parts


def _block_of(operand: np.ndarray, subscript: str, letter: str, span: tuple[int, int]
              ) -> np.ndarray:
    """`operand` restricted to the range `span` of the axis named `letter` (if it has it)."""
    if letter not in subscript:
        return operand
    index = [slice(None)] * operand.ndim
    index[subscript.index(letter)] = slice(*span)
    return operand[tuple(index)]


def _contract(spec: str, operands: list[np.ndarray]) -> np.ndarray:
    """A real contraction: one BLAS product where it is one (`_tensordot`), else einsum
    (whose own path was as fast as, or faster than, one `np.matmul` over a batch of matrices
    made of the factors — an im2col copy of a convolution's windows — on AlexNet's layers)."""
    result = _tensordot(spec, operands)
    if result is None:
        result = np.einsum(spec, *operands, optimize=_einsum_path(spec, operands))
    return result


@dataclass(frozen=True)
class BlockedSum:
    """A real sum of products computed block by block: each block (a contiguous run of
    the iteration order, `_blocks`) one contraction in any order, the block sums then added
    to the current value one at a time, in order. `total` is that value. Like any order of
    the sum, it is within gamma(n + f) (|v| + M) of the definition's (the bound `add_in_order`
    tries first, one pass over the cells); for the cells that bound leaves open, `error(cells)`
    gives a far tighter one, from what the order of the blocks knows:

    - the definition: each addition errs by at most u |s_j| (s_j its computed partial sums),
      each product of f factors by gamma(f - 1) |x_j|. With S_j the exact partial sums,
      |s_j| <= |S_j| + gamma(n + f) (|v| + M) (v the current value, M the magnitude bound);
      inside block b, |S_j| <= |S(b-1)| + M_b, and |S(b-1)| <= |Q(b-1)| + gamma(n + f + B)
      (|v| + M), Q the computed prefix of block sums (Q(0) = v). So the definition errs by at
      most u (sum_b L_b |Q(b-1)| + L M + 2 n gamma(n + f + B) (|v| + M)) + gamma(f - 1) M,
      L the longest block, B the number of blocks (Higham, Accuracy and Stability of
      Numerical Algorithms, §4.2: the error of recursive summation is at most u sum |s_j|);
    - this sum: each block in any order errs by at most gamma(L + f) M_b, each of the B
      additions of a block sum by u |Q(b)|: gamma(L + f) M + u sum_b |Q(b)|;
    - products that underflow: at most 2^-1075 each, n of them in each sum.

    The bound's own roundings are covered by raising it by 2 gamma(B + 8). Computing it for
    every cell took six passes over the cells per block (a sixth of AlexNet's run); only the
    few cells the plain bound leaves open need it."""

    total: np.ndarray
    start: np.ndarray
    parts: list[np.ndarray]
    lengths: list[int]
    magnitude: np.ndarray
    factors: int

    @staticmethod
    def of(view: np.ndarray, parts: list[np.ndarray], lengths: list[int],
           magnitude: np.ndarray, factors: int) -> "BlockedSum":
        with np.errstate(all="ignore"):
            start = np.array(view, dtype=np.float64)
            total = start.copy()
            for part in parts:  # in order, in place: Q(b) = Q(b-1) + the block's sum
                total += part
        # an array, even of rank 0 (add_in_order writes into it): 0-d + 0-d is a scalar
        return BlockedSum(np.array(total, dtype=np.float64), start, parts, lengths,
                          magnitude, factors)

    def error(self, cells: np.ndarray) -> np.ndarray:
        """The bound on |total - the definition's sum| of the flat cells `cells`."""
        with np.errstate(all="ignore"):
            start = self.start.reshape(-1)[cells]
            magnitude = np.broadcast_to(self.magnitude, self.total.shape).reshape(-1)[cells]
            prefix = start.copy()  # Q(b), recomputed in the same order as `total`
            weighted = np.zeros(start.shape)  # sum_b L_b |Q(b-1)|
            absolute = np.zeros(start.shape)  # sum_b |Q(b)|
            for part, length in zip(self.parts, self.lengths):
                weighted += float(length) * np.abs(prefix)
                prefix += np.broadcast_to(part, self.total.shape).reshape(-1)[cells]
                absolute += np.abs(prefix)
            n, blocks, longest = sum(self.lengths), len(self.parts), max(self.lengths)
            f = self.factors
            reach = np.abs(start) + magnitude
            error = UNIT * (weighted + longest * magnitude +
                            2.0 * n * _gamma(n + f + blocks) * reach)
            error += (_gamma(f - 1) + _gamma(longest + f)) * magnitude
            error += UNIT * absolute + 2.0 * n * 2.0 ** -1075
            error *= 1.0 + 2.0 * _gamma(blocks + 8)
        return error


def _gamma(k: Any) -> Any:
    """gamma(k) = k u / (1 - k u), u the unit roundoff: the relative error bound of k
    roundings (Higham, Accuracy and Stability of Numerical Algorithms, §3.1); infinite where
    k u >= 1/2. `k` is an int or an int array."""
    if type(k) is int:  # the common case, without NumPy's per-call cost
        m = k * UNIT
        return m / (1.0 - m) if m < 0.5 else math.inf
    m = np.asarray(k, dtype=np.float64) * UNIT
    with np.errstate(divide="ignore"):
        return np.where(m < 0.5, m / (1.0 - m), np.inf)


def _over(array: np.ndarray, shape: list[int], kept_shape: list[int]) -> np.ndarray:
    """`array` reshaped to `shape` (1 where it lacks a kept axis), broadcast over the kept
    cells only where it lacks one (a broadcast view cannot be written over)."""
    array = array.reshape(shape)
    return array if list(array.shape) == list(kept_shape) else np.broadcast_to(array, kept_shape)


def _reusable(array: Any, shape: tuple[int, ...]) -> bool:
    """May `add_in_order` write its results over `array` (a fresh float64 array of the cells,
    in C order, so that its flat cell indices are the view's)?"""
    return isinstance(array, np.ndarray) and array.dtype == np.float64 and \
        array.shape == tuple(shape) and array.flags.writeable and array.flags.c_contiguous


def _unsettled(error: np.ndarray, new: np.ndarray) -> np.ndarray:
    """The flat indices of the cells whose error bound `error` (overwritten) does not fit
    within half the engines' tolerance of the sum `new`: not
    `error <= 0.5 * (REAL_ATOL + REAL_RTOL * |new|)`, nor a finite `new` (an infinity may
    come of an overflow in one order only; a nan error never fits).

    Tested as `error * 2 / rtol - atol / rtol <= |new|` (`error` is overwritten): fewer passes
    over the cells and only bool arrays made, and
    each constant is rounded the safe way (the scale raised and the offset lowered by far
    more than the roundings of the products and the difference), so a cell this accepts
    fits the tolerance exactly as written."""
    if not isinstance(error, np.ndarray):  # the bound of a rank-0 output: a NumPy scalar
        error = np.array(error, dtype=np.float64)
    error *= (2.0 / REAL_RTOL) * (1.0 + 16.0 * UNIT)
    error -= (REAL_ATOL / REAL_RTOL) * (1.0 - 16.0 * UNIT)
    fits = np.less_equal(error, new)  # e <= |new|: e <= new or -e >= new; no |new| array
    np.negative(error, out=error)
    fits |= np.greater_equal(error, new)
    fits &= np.isfinite(new)
    if fits.all():
        return np.empty(0, dtype=np.intp)
    return np.flatnonzero(np.logical_not(fits))


def _upper_norm(squares: Any, n: int) -> Any:
    """An upper bound of the 2-norm of `n` reals from their computed sum of squares
    `squares`. The terms are non-negative, so the computed sum is low by at most a relative
    gamma(n) (Higham §3.1), plus what underflowed: a square below 2^-1022 may be off by up to
    that much, n of them by n * 2^-1022 in all. The square root and at most two products by
    the caller (sqrt(count) *, * repeat) add a rounding each; raising the result by
    2 * gamma(n + 4) covers all of them. An overflow or a nan gives inf or nan: no bound,
    and add_in_order takes the exact magnitude of those cells."""
    with np.errstate(all="ignore"):
        return np.sqrt(squares + n * 2.0 ** -1022) * (1.0 + 2.0 * _gamma(n + 4))


def _magnitude_bound(spec: str, operands: list[np.ndarray], shape: tuple[int, ...],
                     present: set[int]) -> np.ndarray | None:
    """An upper bound of a real contraction's magnitude sum(|product|) per output cell
    (before `repeat`), cheaper than contracting the operands' absolute values, or None.

    By Cauchy-Schwarz, sum_k |a_k| <= sqrt(n) * ||a||_2 (one operand: a sum over n terms),
    and sum_k |a_k b_k| <= ||a||_2 ||b||_2 for two factors, each taken as a vector over all
    the summed letters of the output cell (a letter a factor lacks repeats it): matrix
    products, and a convolution's windows and filters alike. Sums of squares, one pass over
    each operand without a temporary (`np.einsum` of an operand with itself), where |A| @ |B|
    would be a second contraction as large as the first. The norms come from `_upper_norm`
    (which allows for a product by the caller and the extent a factor is repeated by)."""
    inputs, out = spec.split("->")
    subscripts = inputs.split(",")
    extent = {LETTERS[a]: shape[a] for a in present}
    if len(operands) == 1:
        (sub,), (x,) = subscripts, operands
        n = math.prod(extent[c] for c in sub if c not in out)
        squares = _sum_of_squares(x, sub, out)
        return math.sqrt(n) * _upper_norm(squares, n)
    if len(operands) != 2 or any(len(set(sub)) != len(sub) for sub in subscripts):
        return None
    # each factor as a vector over all the summed letters (one it lacks repeats it: its sum of
    # squares is multiplied by that letter's extent, before the square root)
    summed = {c for sub in subscripts for c in sub if c not in out}
    norms, keeps = [], []
    for sub, x in zip(subscripts, operands):
        keep = "".join(c for c in sub if c not in summed)
        repeat = math.prod(extent[c] for c in summed if c not in sub)
        squares = _sum_of_squares(x, sub, keep)
        if repeat != 1:
            squares = squares * float(repeat)
        norms.append(_upper_norm(squares, math.prod(extent[c] for c in summed)))
        keeps.append(keep)
    return np.einsum(f"{keeps[0]},{keeps[1]}->{out}", *norms)


def _sum_of_squares(x: np.ndarray, sub: str, keep: str) -> np.ndarray:
    """The sum of x**2 over the letters of `sub` not in `keep`, per cell of `keep` (in any
    order: `_upper_norm` allows for it), as `np.einsum(f"{sub},{sub}->{keep}", x, x)`.

    A convolution's windows are a strided view of the input in which every element appears
    once per filter tap: squaring the view reads the input K times over (as long as the
    contraction's own im2col). Where `x` is a view of a C-contiguous array (`_square_sums`)
    and a summed letter walks a memory axis alone, with unit step (the channel), that axis
    is summed on the array itself, once per element, and only the other letters (the window
    taps) on a view of the smaller result (a 64-channel 3x3 convolution over 56x56: 3.3 ms
    -> 0.3 ms)."""
    # a contiguous array reads each element once; a small one is not worth the set-up
    overlapping = x.size >= 4096 and not (x.flags.c_contiguous or x.flags.f_contiguous)
    found = _square_sums(x, sub, keep) if overlapping else None
    if found is not None:
        return found
    return np.einsum(f"{sub},{sub}->{keep}", x, x)


def _square_sums(x: np.ndarray, sub: str, keep: str) -> np.ndarray | None:
    """`_sum_of_squares` by first summing the memory axes that a summed letter alone walks,
    or None where that does not apply."""
    owner = x
    while getattr(owner, "base", None) is not None:  # through as_strided's DummyArray too
        owner = owner.base
    if not isinstance(owner, np.ndarray) or owner is x or not owner.flags.c_contiguous or \
            owner.dtype != x.dtype or owner.ndim > len(LETTERS):
        return None
    strides = owner.strides
    offset = x.__array_interface__["data"][0] - owner.__array_interface__["data"][0]
    origin = []
    for stride, length in zip(strides, owner.shape):  # the first element's coordinates
        coordinate, offset = divmod(offset, stride) if stride else (0, offset)
        if not 0 <= coordinate < max(length, 1):
            return None
        origin.append(coordinate)
    if offset:
        return None
    walks: dict[str, tuple[int, int]] = {}  # letter -> (memory axis, step along it)
    for letter, length, stride in zip(sub, x.shape, x.strides):
        if length == 1:
            continue
        axis = next((a for a, st in enumerate(strides)
                     if st and abs(stride) >= st and stride % st == 0 and
                     abs(stride) // st < owner.shape[a]), None)
        if axis is None:
            return None
        walks[letter] = (axis, stride // strides[axis])
    users = [sum(1 for a, _ in walks.values() if a == axis) for axis in range(owner.ndim)]
    alone = {axis for letter, (axis, step) in walks.items()
             if letter not in keep and step == 1 and users[axis] == 1}
    if not alone:
        return None
    low, high = list(origin), list(origin)  # the coordinates the view reaches, per axis
    for letter, (axis, step) in walks.items():
        reach = step * (x.shape[sub.index(letter)] - 1)
        low[axis] += min(0, reach)
        high[axis] += max(0, reach)
    region = tuple(slice(lo, hi + 1) for lo, hi in zip(low, high))
    if math.prod(hi + 1 - lo for lo, hi in zip(low, high)) >= x.size:
        return None  # no element read twice: nothing to gain
    names = LETTERS[:owner.ndim]
    rest_axes = [a for a in range(owner.ndim) if a not in alone]
    part = owner[region]
    reduced = np.einsum(f"{names},{names}->" + "".join(names[a] for a in rest_axes),
                        part, part)
    letters = [c for c in sub if c not in walks or walks[c][0] not in alone]
    start = sum((origin[a] - low[a]) * reduced.strides[k] for k, a in enumerate(rest_axes))
    shape, view_strides = [], []
    for c in letters:
        shape.append(x.shape[sub.index(c)])
        if c in walks:
            axis, step = walks[c]
            view_strides.append(step * reduced.strides[rest_axes.index(axis)])
        else:
            view_strides.append(0)
    view = np.lib.stride_tricks.as_strided(
        reduced.reshape(-1)[start // reduced.itemsize:], shape=shape, strides=view_strides,
        writeable=False)
    return np.einsum("".join(letters) + "->" + keep, view)


def _arrange(box: Box, array: Any, axes: list[int]) -> np.ndarray:
    """`array` over the box, laid out along `axes` (the other axes have extent 1)."""
    full = np.broadcast_to(A.as_array(array), box.shape)
    others = [a for a in range(len(box.shape)) if a not in axes]
    return full.transpose(axes + others).reshape([box.shape[a] for a in axes])


def _flat_positions(box: Box, target: np.ndarray, positions: list[Any], value: np.ndarray,
                    valid: Mask) -> tuple[np.ndarray, np.ndarray]:
    """The flat target positions and values of the live iterations, in iteration order."""
    arrays = np.broadcast_arrays(*[np.asarray(p) for p in positions], value,
                                 np.ones(box.shape, dtype=bool) if valid is None else valid,
                                 np.empty(box.shape, dtype=bool))
    *index, values, keep, _ = arrays
    keep = keep.reshape(-1)
    flat = np.ravel_multi_index(tuple(i.reshape(-1)[keep] for i in index), target.shape) \
        if index else np.zeros(int(keep.sum()), dtype=np.int64)
    return flat, values.reshape(-1)[keep]


def _tensordot(spec: str, operands: list[np.ndarray]) -> np.ndarray | None:
    """A two-factor real contraction of matrices or vectors (`ab,bc->ac`) as `np.tensordot`
    (one BLAS product), or None when it is not one: a letter shared by both factors and the
    result (a batch axis), a letter repeated within a factor, or one to sum within a single
    factor."""
    axes = _tensordot_axes(spec, operands)
    if axes is None:
        return None
    result = np.tensordot(operands[0], operands[1], axes=axes[:2])
    return result.transpose(axes[2])


def _tensordot_axes(spec: str, operands: list[np.ndarray]
                    ) -> tuple[list[int], list[int], list[int]] | None:
    """For `_tensordot`: the summed axes of each factor and the transpose of the product to
    the result's order; None when the contraction is not a product of two matrices or
    vectors."""
    if len(operands) != 2 or any(o.ndim > 2 for o in operands):
        return None  # higher ranks (a convolution's windows): einsum's own path is faster
    inputs, out = spec.split("->")
    left, right = inputs.split(",")
    shared = [c for c in left if c in right]
    if any(c in out for c in shared) or len(set(left)) != len(left) or \
            len(set(right)) != len(right) or \
            any(c not in out for c in left + right if c not in shared):
        return None
    order = [c for c in left if c not in shared] + [c for c in right if c not in shared]
    return ([left.index(c) for c in shared], [right.index(c) for c in shared],
            [order.index(c) for c in out])


_PATHS: BoundedCache[list] = BoundedCache(1024)  # (subscripts, operand shapes) -> path


def _einsum_path(spec: str, operands: list[np.ndarray]) -> Any:
    """The contraction order for `np.einsum` (BLAS where it can), searched once per
    subscripts and shapes."""
    if len(operands) < 2:
        return False
    key = (spec, *(o.shape for o in operands))
    path = _PATHS.get(key)
    if path is None:
        path = np.einsum_path(spec, *operands, optimize="greedy")[0]
        _PATHS.put(key, path)
    return path
