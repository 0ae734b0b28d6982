"""Intrinsics of the `layout` module: `layout.nonzero`, which the spec declares without a body
(§4.1.6 "Finding indices where data is non-zero": its output extent depends on the data)."""

from __future__ import annotations

from typing import Any

import numpy as np

from refinterp.language.instance import OperatorInstance
from refinterp.run.intrinsics import intrinsic


@intrinsic("layout.nonzero")
def nonzero(instance: OperatorInstance, inputs: dict[str, Any]) -> dict[str, Any]:
    """The multi-indices of the non-zero elements of `input` (any rank `d`), as an int tensor
    `index` of shape `[d, count]`: column `j` is the index of the `j`-th non-zero element in
    row-major order. Non-zero means `x != T(0)`: `true` for bools; nan counts as non-zero and
    -0.0 as zero. A rank-0 input gives shape `[0, 1]` or `[0, 0]` (one empty index, or none)."""
    data = np.asarray(inputs["input"])
    found = data != 0
    count = int(np.count_nonzero(found))
    if data.ndim == 0:  # NumPy has no nonzero of a scalar: `count` empty multi-indices
        return {"index": np.zeros((0, count), dtype=np.int64)}
    index = np.array(np.nonzero(found), dtype=np.int64).reshape(data.ndim, count)
    return {"index": index}
