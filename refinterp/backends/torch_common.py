"""The table of the PyTorch back end (refinterp.backends.torch): translations register here.

A translation takes a `Call` (the case's attributes, generics and input tensors) and returns
the operator's outputs as torch tensors (a pack as a list), in the order of the names given to
`translation(...)`. It raises `Unsupported` for any attribute value torch cannot express; it
never approximates one. Imported only once torch is importable (from
`TorchBackend.prepare`).
"""

from __future__ import annotations

from typing import Any

import torch

from refinterp.backends.calls import Call, Translation, Translations  # noqa: F401
from refinterp.harness.backends import Unsupported

REAL, INT, BOOL = torch.float64, torch.int64, torch.bool
DTYPES = {"real": REAL, "int": INT, "bool": BOOL}


TABLE = Translations()
translation = TABLE.register


def unsupported(what: str) -> Unsupported:
    """The exception for an attribute value or input torch cannot express."""
    return Unsupported(f"torch cannot express {what}")


def axis_of(axis: int, rank: int) -> int:
    """A possibly negative axis as a non-negative one, with torch's own rule and message
    for an axis outside [-rank, rank) (so normalising never makes an invalid axis valid)."""
    if not -rank <= axis < rank:
        raise IndexError(f"Dimension out of range (expected to be in range of "
                         f"[{-rank}, {rank - 1}], but got {axis})")
    return axis + rank if axis < 0 else axis


def require(condition: bool, what: str) -> None:
    """Raise Unsupported naming `what` unless `condition`."""
    if not condition:
        raise unsupported(what)


def aligned(*pairs: tuple[Any, int | None]) -> list[Any]:
    """The operands of a SkriptND broadcasting operator reshaped by their `_align` attributes
    (math.sknd @using: q = r + |align|, rz = max q, p = align < 0 ? rz - q : align, default
    rz - r, i.e. NumPy's right alignment) so that torch's own broadcasting finishes the job.
    Only unit axes are inserted: a shape mismatch remains torch's to reject."""
    ranks = [t.dim() for t, _ in pairs]
    qs = [r + abs(a or 0) for r, (_, a) in zip(ranks, pairs)]
    rz = max(qs)
    out = []
    for (tensor, align), r, q in zip(pairs, ranks, qs):
        p = (rz - q if align < 0 else align) if align is not None else rz - r
        shape = [1] * p + list(tensor.shape) + [1] * (rz - r - p)
        out.append(tensor.reshape(shape))
    return out
