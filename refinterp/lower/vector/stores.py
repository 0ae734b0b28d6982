"""Stores of the vector engine (docs/performance.md, "The vector engine", "Stores"): how the
values of one box reach the output.

Positions that are each a constant or a distinct axis ("plain"), or affine in the axes with
every cell addressed once, give a view of the output: `=` is then a view assignment (a freshly
computed array covering the whole output simply becomes the output), an update a reduction over
the axes missing from the output, and `+=` of a product one contraction (`np.tensordot` for two
matrices or vectors, else `np.einsum` with a cached path: products.py). A real `+=` of a
product whose positions are affine in the axes but address cells more than once (a transposed
convolution's `|stride * i + dilation * j - offset|`) runs tap by tap (taps.py). Any other
position pattern is a scatter in iteration order: `ufunc.at` for updates (unbuffered and
ordered), last-write-wins for `=` / `:=`. A real sum in another order than the definition's is
certified cell by cell, or summed again in order (sums.py).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from refinterp.language.values import NULL
from refinterp.lower.common import Refused
from refinterp.lower.plan import NEUTRAL, UPDATE_OPS, Formula, start_value
from refinterp.lower.vector import sums, taps
from refinterp.lower.vector.access import Guard, Read, affine, all_finite, plain, selection
from refinterp.lower.vector.products import (LETTERS, contract_reals, einsum_path, tensordot,
                                             tensordot_axes)
from refinterp.lower.vector.space import Box, Mask
from refinterp.lower.vector.sums import (MIN_BLOCKED_EINSUM_TERMS, MIN_BLOCKED_SUM_TERMS,
                                         MIN_BLOCKED_TERMS, BlockedSum, block_ranges,
                                         block_sums, magnitude_bound, upper_norm)
from refinterp.numeric import array_rules as A
from refinterp.numeric import rules
from refinterp.numeric.representation import kind_of

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
            raise Refused("the value to store is not a single number")
        array = A.as_array(value)
        if kind_of(array) != self.kind:
            raise Refused(f"a {kind_of(array)} value for a {self.kind} output")
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
            raise Refused("the output position is not plain in the kept axes")
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
                raise Refused("an assignment writes a cell twice out of iteration order")
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
                raise Refused(f"an int '{op}' scatter")
            bound = np.abs(values.astype(np.float64)).sum() + \
                (np.abs(view.astype(np.float64)).max() if view.size else 0.0)
            if op == "+=" and bound >= A.SAFE_INT:
                raise Refused("an int sum may leave int64")
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
                    raise Refused(f"an int '{op}' reduction may leave int64")
            if op == "+=" and self.kind == "real":
                count = laid.shape[-1]
                flat_terms = laid.reshape(-1, count)
                # the magnitude sum(|t|) bounded by Cauchy-Schwarz from the same sum of squares
                # as one pass without a temporary; cells it does not settle get the exact one
                squares = np.einsum("...k,...k->...", laid, laid)
                bound = math.sqrt(count) * upper_norm(squares, count)
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
                     bounded: bool = False, blocked: BlockedSum | None = None) -> None:
        """view <- view + the sum of `count` terms per cell, as the definition adds them: the
        fast sum where its error bound fits the engines' tolerance, the other cells summed
        again in iteration order (`sums.add_in_order`, which says what each argument is)."""
        sums.add_in_order(view, fast, magnitude, count, terms, depth, fast_depth, bounded,
                          blocked)

    def combine(self, view: np.ndarray, result: Any) -> None:
        """view <- view (op) result, by the update operator's pairwise rule."""
        if self.kind == "real" and self.op in ("+=", "*="):
            ufunc = np.add if self.op == "+=" else np.multiply
            with np.errstate(all="ignore"):  # inf - inf, 0 * inf: NaN, as IEEE says
                ufunc(view, result, out=view)  # IEEE + and *: rules.binary's real rule
            return
        view[...] = A.binary(UPDATE_OPS[self.op], view, result, self.profile)

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
        if self.kind == "real" and valid is None and len(arrays) <= 2 and \
                not any(read.padded for read in reads) and \
                all(shape[a] == 1 for a in range(len(shape)) if a not in kept):
            # one term per cell (`y[i..] += xs[k][i..]` a pack item at a time): the sum is the
            # definition's own one addition of one product, nothing to certify
            with np.errstate(all="ignore"):  # 0 * inf: NaN, as IEEE says
                term = arrays[0] if len(arrays) == 1 else np.multiply(arrays[0], arrays[1])
            order = [*kept, *(a for a in range(len(shape)) if a not in kept)]
            self.combine(view, np.broadcast_to(term, shape).transpose(order).reshape(
                [shape[a] for a in kept]))
            return True
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
            if tensordot_axes(spec, operands) is not None else MIN_BLOCKED_EINSUM_TERMS
        blocks = block_ranges(shape, rest, present, least) \
            if self.kind == "real" and repeat == 1 else None
        with np.errstate(all="ignore"):
            if self.kind == "int":
                bound = np.einsum(spec, *[np.abs(o.astype(np.float64)) for o in operands])
                if np.any(bound * repeat >= A.SAFE_INT):
                    raise Refused("an int contraction may leave int64")
            if blocks is not None:  # the block sums
                parts = block_sums(spec, operands, subscripts, *blocks)
                result = parts[0]  # (shape only: the blocked sum is BlockedSum's)
            else:
                result = contract_reals(spec, operands) if self.kind == "real" else np.einsum(
                    spec, *operands, optimize=einsum_path(spec, operands))
            if repeat != 1:
                result = result * (repeat if self.kind == "int" else float(repeat))
        kept_shape = [shape[a] for a in kept]
        result = _over(result, [shape[a] if a in present else 1 for a in kept], kept_shape)
        if self.kind != "real":
            self.combine(view, result)
            return True
        with np.errstate(all="ignore"):
            magnitude = magnitude_bound(spec, operands, shape, present)
            bounded = magnitude is not None
            if magnitude is None:
                absolute = [np.abs(o) for o in operands]  # the terms' magnitudes, the same way
                magnitude = tensordot(spec, absolute)
                if magnitude is None:
                    magnitude = np.einsum(spec, *absolute,
                                          optimize=einsum_path(spec, absolute))
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
        """A real `+=` of a product at positions affine in the axes that address cells more
        than once, tap by tap (`taps.add_by_taps`); False (nothing written) if the store is
        not of that form."""
        return taps.add_by_taps(self, box, target, positions, reads, valid)


def _over(array: np.ndarray, shape: list[int], kept_shape: list[int]) -> np.ndarray:
    """`array` reshaped to `shape` (1 where it lacks a kept axis), broadcast over the kept
    cells only where it lacks one (a broadcast view cannot be written over)."""
    array = array.reshape(shape)
    return array if list(array.shape) == list(kept_shape) else np.broadcast_to(array, kept_shape)


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


