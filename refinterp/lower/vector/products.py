"""Contractions of the vector engine's stores: a two-factor product of matrices or vectors as
one BLAS product (`tensordot`), any other as `np.einsum` with a contraction path searched once
per subscripts and shapes (`einsum_path`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from refinterp.core.cache import BoundedCache

LETTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"  # einsum subscripts


def contract_reals(spec: str, operands: list[np.ndarray]) -> np.ndarray:
    """A real contraction: one BLAS product where it is one (`tensordot`), else einsum
    (whose own path was as fast as, or faster than, one `np.matmul` over a batch of matrices
    made of the factors — an im2col copy of a convolution's windows — on AlexNet's layers)."""
    result = tensordot(spec, operands)
    if result is None:
        result = np.einsum(spec, *operands, optimize=einsum_path(spec, operands))
    return result


def tensordot(spec: str, operands: list[np.ndarray]) -> np.ndarray | None:
    """A two-factor real contraction of matrices or vectors (`ab,bc->ac`) as `np.tensordot`
    (one BLAS product), or None when it is not one: a letter shared by both factors and the
    result (a batch axis), a letter repeated within a factor, or one to sum within a single
    factor."""
    axes = tensordot_axes(spec, operands)
    if axes is None:
        return None
    result = np.tensordot(operands[0], operands[1], axes=axes[:2])
    return result.transpose(axes[2])


def tensordot_axes(spec: str, operands: list[np.ndarray]
                    ) -> tuple[list[int], list[int], list[int]] | None:
    """For `tensordot`: the summed axes of each factor and the transpose of the product to
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


def einsum_path(spec: str, operands: list[np.ndarray]) -> Any:
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
