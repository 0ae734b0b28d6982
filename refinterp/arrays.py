"""refinterp's array representation: real tensors are float64, int tensors int64, bool tensors
bool (docs/semantics.md "Numbers"); a pack of tensors is a list of arrays."""

from __future__ import annotations

from typing import Any

import numpy as np

NUMPY_DTYPES = {"real": np.float64, "int": np.int64, "bool": np.bool_}


def kind_of(array: Any) -> str:
    """The SkriptND type of an array: 'real', 'int', 'bool', or '?' for anything else."""
    return {"f": "real", "i": "int", "u": "int", "b": "bool"}.get(np.asarray(array).dtype.kind,
                                                                   "?")


def canonical(array: Any) -> np.ndarray:
    """An array in refinterp's representation (float → float64, signed/unsigned int → int64);
    raises TypeError for other dtypes."""
    array = np.asarray(array)
    kind = kind_of(array)
    if kind == "?":
        raise TypeError(f"dtype {array.dtype} is not a real, int or bool array")
    return array.astype(NUMPY_DTYPES[kind], copy=False)
