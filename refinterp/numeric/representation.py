"""refinterp's array representation: real tensors are float64, int tensors int64, bool tensors
bool (docs/semantics.md "Numbers"); a pack of tensors is a list of arrays."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from refinterp.numeric import rules

INT64_MIN, INT64_MAX = -(2 ** 63), 2 ** 63 - 1  # the range of an int tensor element
NUMPY_DTYPES = {"real": np.float64, "int": np.int64, "bool": np.bool_}


@dataclass(frozen=True)
class AbstractTensor:
    """A tensor known only by its SkriptND type and shape: what a composition is checked with
    before anything is computed (`refinterp shapes`, `api.check`). It answers `dtype`, `shape`,
    `ndim` and `size` like an array, and holds no values."""

    kind: str                     # 'real', 'int' or 'bool'
    shape: tuple[int, ...]

    @property
    def dtype(self) -> np.dtype:
        return np.dtype(NUMPY_DTYPES[self.kind])

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=object))


def kind_of(value: Any) -> str:
    """THE value-kind function: the SkriptND type of an array, an abstract tensor or a NumPy
    dtype ('real', 'int', 'bool', or '?' for other dtypes), or of a Python scalar ('bool',
    'int', 'real', 'str'; see `rules.kind`)."""
    if isinstance(value, (np.ndarray, AbstractTensor, np.generic)):
        dtype = value.dtype
    elif isinstance(value, np.dtype) or (isinstance(value, type) and
                                         issubclass(value, np.generic)):
        dtype = np.dtype(value)
    elif isinstance(value, (bool, int, float, str)) or hasattr(value, "sign"):
        return rules.kind(value)
    else:
        dtype = np.asarray(value).dtype
    return {"f": "real", "i": "int", "u": "int", "b": "bool"}.get(dtype.kind, "?")


def canonical(array: Any) -> np.ndarray:
    """An array in refinterp's representation (float → float64, signed/unsigned int → int64);
    raises TypeError for other dtypes."""
    array = np.asarray(array)
    kind = kind_of(array)
    if kind == "?":
        raise TypeError(f"dtype {array.dtype} is not a real, int or bool array")
    return array.astype(NUMPY_DTYPES[kind], copy=False)
