"""refinterp's array representation: real tensors are float64, int tensors int64, bool tensors
bool (docs/semantics.md "Numbers"); a pack of tensors is a list of arrays.

The limits of a representation (docs/limits.md) are here too, so that every ring can check them
before it allocates: the bytes of one tensor (`MAX_TENSOR_SIZE`, `check_tensor_size`) and the
items of one pack of tensors (`MAX_PACK_LENGTH`, `check_pack_length`)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from refinterp.core.diagnostics import Diagnostic
from refinterp.core.source import Span
from refinterp.numeric import rules

INT64_MIN, INT64_MAX = -(2 ** 63), 2 ** 63 - 1  # the range of an int tensor element
NUMPY_DTYPES = {"real": np.float64, "int": np.int64, "bool": np.bool_}
MAX_TENSOR_SIZE = 2 ** 30  # bytes of one tensor (--max-tensor-size, max_tensor_size=)
MAX_PACK_LENGTH = 100_000  # items of one pack of tensors (--max-pack-length, max_pack_length=)


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


# ------------------------------------------------------------------------------- limits


def limit_note(option: str) -> str:
    """The note of every limit diagnostic: the command-line option and the API keyword that
    raise the limit (`--max-tensor-size` is `max_tensor_size=`)."""
    keyword = option.removeprefix("--").replace("-", "_")
    return f"raise the limit with {option} (refinterp.api: {keyword}=); see docs/limits.md"


def tensor_bytes(kind: str, shape: Sequence[int]) -> int:
    """The bytes a tensor of `kind` ('real', 'int' or 'bool') and `shape` takes in refinterp's
    representation (exact, however large the extents)."""
    return math.prod(shape) * np.dtype(NUMPY_DTYPES[kind]).itemsize


EXACT_BITS = 1000  # an int of more bits (301 digits) is rounded in messages; a float holds it


def format_bytes(size: int) -> str:
    """`80000000000 bytes (74.5 GiB)`; small sizes as bytes only. A size too long to read (an
    extent computed at compile time has no bound) is rounded: `about 8e+100000 bytes`."""
    if size.bit_length() > EXACT_BITS:
        return f"about {_scientific(size)} bytes"
    units = [(2 ** 40, "TiB"), (2 ** 30, "GiB"), (2 ** 20, "MiB"), (2 ** 10, "KiB")]
    unit = next(((scale, name) for scale, name in units if size >= scale), None)
    return f"{size} bytes" + (f" ({size / unit[0]:.3g} {unit[1]})" if unit else "")


def format_extent(extent: int) -> str:
    """An extent or count for a message: its digits, or rounded when too long to read
    (`about 1e+100000`)."""
    if isinstance(extent, int) and extent.bit_length() > EXACT_BITS:
        return f"{'-' if extent < 0 else ''}about {_scientific(abs(extent))}"
    return str(extent)


def _scientific(number: int) -> str:
    """A positive int of any size to 3 significant digits, `8e+100000`, without converting it
    to a float (which overflows) or to all its digits (slow, and limited by Python)."""
    shift = max(0, number.bit_length() - 64)  # the leading 64 bits give the digits
    exponent = math.log10(number >> shift) + shift * math.log10(2)
    power = math.floor(exponent)
    mantissa = f"{10 ** (exponent - power):.3g}"
    return f"1e+{power + 1}" if mantissa == "10" else f"{mantissa}e+{power}"


MAX_RANK = 64  # the most axes a NumPy array can have


def check_tensor_size(kind: str, shape: Sequence[int | None], limit: int, what: str,
                      span: Span | None = None) -> None:
    """Raise E1200 when a tensor would take more than `limit` bytes: checked before the tensor
    is made. An empty tensor counts as if its zero extents were 1 (NumPy refuses an empty
    array whose other extents are too large, too). A shape with an unknown (None) or invalid
    extent is not checked here."""
    if len(shape) > MAX_RANK:
        raise Diagnostic(f"{what} has rank {len(shape)}; refinterp holds tensors of rank at "
                         f"most {MAX_RANK} (NumPy's limit)", span, code="E1200")
    if any(not isinstance(extent, int) or extent < 0 for extent in shape):
        return
    size = tensor_bytes(kind, [extent or 1 for extent in shape])  # type: ignore[misc]
    if size > limit:
        empty = " were it not empty" if 0 in shape else ""
        extents = ", ".join(map(format_extent, shape))
        raise Diagnostic(f"{what} ({kind}[{extents}]) would take {format_bytes(size)}{empty}, "
                         f"above the tensor size limit of {format_bytes(limit)}", span,
                         [limit_note("--max-tensor-size")], code="E1200")


def check_pack_length(length: int, limit: int, what: str, span: Span | None = None) -> None:
    """Raise E1202 when a pack of tensors would have more than `limit` items: checked before
    the pack is built."""
    if length > limit:
        raise Diagnostic(f"{what} is a pack of {length} tensors, above the pack length limit "
                         f"of {limit}", span, [limit_note("--max-pack-length")], code="E1202")
