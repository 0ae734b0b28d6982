"""Packs of dynamic tensors (profile field `jagged_packs`; docs/semantics.md, "Jagged packs").

An operator output declared with a dynamic extent (`Y: real[~|s, b, n]`, spec §2.6 "Dynamic
input and output shapes") has a run-time extent of at most its bound. A loop that collects such
outputs into a pack (the Khronos `nn._jagged_lstm_loops`: one LSTM per batch item, each with its
own step count) gives items whose extents differ along that axis, and stacking them needs one
shared extent. Under `jagged_packs = "pad"` (profile khronos: the Khronos runtime allocates every
dynamic tensor at its bound) such a pack is zero-padded, along the dynamic axes only, to the
largest item extent before it is passed to an operator — the values ONNX and PyTorch give past a
sequence's end. Items that differ in any other axis are left alone (the callee reports them).

The same marks carry the symbols of a run's dynamic extents (`numeric.symbolic.Extent`:
docs/semantics.md "Shapes without values"): an array whose declared type has an extent bound
from a dynamic extent of the run's root keeps it, so an operator it is passed to binds that
extent with its symbol and `is` compares symbols there too, as in a check without values.
"""

from __future__ import annotations

import weakref
from typing import Any

import numpy as np

from refinterp.language.invocation import TensorType, tensor_type
from refinterp.numeric.symbolic import Extent


class DynamicExtents:
    """Remembers which axes of which arrays came from dynamic output extents, and which
    extents of which arrays are a run's dynamic extents with their symbols."""

    def __init__(self) -> None:
        # id(array) -> (weak reference to it, its dynamic axes, its shape with the symbols of
        # its dynamic extents or None); the reference tells a live entry from a stale one whose
        # id a new array reuses
        self._axes: dict[int, tuple[weakref.ref, frozenset[int], tuple | None]] = {}

    def mark(self, declared: dict[str, Any], outputs: dict[str, Any]) -> None:
        """Record the dynamic axes of `outputs` from their declared types (a TensorType, or a
        tuple of them for a pack output), and the symbols of the extents those types give."""
        for name, value in outputs.items():
            info = declared.get(name)
            items = value if isinstance(value, (list, tuple)) else [value]
            infos = info if isinstance(info, tuple) else [info] * len(items)
            for item, item_info in zip(items, infos):
                bounds = getattr(item_info, "bounds", ())
                axes = frozenset(k for k, b in enumerate(bounds) if b is not None)
                if isinstance(item, np.ndarray):
                    self._mark(item, axes, getattr(item_info, "shape", None))

    def mark_inputs(self, types: dict[str, Any], arrays: dict[str, Any]) -> None:
        """Record the symbols of the root's inputs (their types from
        `language.symbolic_inputs.dynamic_extents`)."""
        for name, array in arrays.items():
            if isinstance(array, np.ndarray):
                self._mark(array, frozenset(), getattr(types.get(name), "shape", None))

    def _mark(self, array: np.ndarray, axes: frozenset[int], shape: tuple | None) -> None:
        symbols = shape if shape is not None and any(isinstance(e, Extent) for e in shape) \
            and all(isinstance(e, int) for e in shape) and \
            tuple(map(int, shape)) == array.shape else None
        if axes or symbols:
            self._prune()
            self._axes[id(array)] = (weakref.ref(array), axes, symbols)

    def _entry(self, array: Any) -> tuple | None:
        entry = self._axes.get(id(array))
        return entry if entry is not None and entry[0]() is array else None

    def axes(self, array: Any) -> frozenset[int]:
        """The dynamic axes of `array` (none if it was not marked)."""
        entry = self._entry(array)
        return entry[1] if entry is not None else frozenset()

    def tensor_type(self, value: Any) -> Any:
        """`invocation.tensor_type(value)`, an array's extents with the symbols it was marked
        with (a run's dynamic extents, `numeric.symbolic.Extent`)."""
        found = tensor_type(value)
        entry = self._entry(value) if isinstance(value, np.ndarray) else None
        if entry is None or entry[2] is None:
            return found
        return TensorType(found.dtype, entry[2], found.bounds)

    def pad(self, value: Any) -> Any:
        """`value` itself, or, for a pack of arrays of equal rank that differ only along axes
        dynamic in every item, the items zero-padded (at the end) to the largest extent."""
        if not isinstance(value, list) or len(value) < 2 or \
                not all(isinstance(v, np.ndarray) for v in value) or \
                len({v.ndim for v in value}) != 1 or len({v.shape for v in value}) == 1:
            return value
        common = frozenset.intersection(*(self.axes(v) for v in value))
        differing = {k for k in range(value[0].ndim) if len({v.shape[k] for v in value}) > 1}
        if not differing or not differing <= common:
            return value
        target = [max(v.shape[k] for v in value) for k in range(value[0].ndim)]
        padded = []
        for item in value:
            widths = [(0, t - n) for t, n in zip(target, item.shape)]
            grown = np.pad(item, widths) if any(w for _, w in widths) else item
            self._axes[id(grown)] = (weakref.ref(grown), self.axes(item), None)
            padded.append(grown)
        return padded

    def _prune(self) -> None:
        """Forget arrays that no longer exist (keeps the table as small as the live arrays)."""
        if len(self._axes) > 4096:
            self._axes = {k: v for k, v in self._axes.items() if v[0]() is not None}
