"""The NNEF binary tensor file format (`.dat`), read and written as the Khronos tools do.

A file is a 128-byte little-endian header followed by the data:

    offset  size  field
    0       2     magic: 0x4E ('N'), 0xEF
    2       2     version: major 1, minor 0
    4       4     data length in bytes (uint32), the payload after the header
    8       4     rank (uint32), at most 8
    12      32    extents (8 × uint32; unused ones 0)
    44      4     bits per item (uint32)
    48      4     item type (uint32): 0 float, 1 uint, 2 quantized uint, 3 quantized int,
                  4 int, 5 bool (codes with a non-zero high half are vendor-defined)
    52      76    reserved (19 × uint32, zero)

The payload is the items in row-major order, little-endian; floats have 16, 32 or 64 bits, the
integer kinds 8, 16, 32 or 64 bits, bools 8 bits (one byte each) or 1 bit (packed, the first
item in the most significant bit of the first byte). The data length must equal
ceil(volume × bits / 8). As in the Khronos Python reader, a `uint` file whose first reserved
word is non-zero is read as signed (an NNEF 1.0 convention).

refinterp holds real tensors as float64, int tensors as int64 and bools as bool; `read_tensor`
converts to those, `write_tensor` writes them losslessly (64-bit floats and ints, 1-bit bools).
"""

from __future__ import annotations

import math
import os
import struct
from pathlib import Path

import numpy as np

from refinterp.core.diagnostics import TensorFileDiagnostic
from refinterp.core.files import open_regular, write_bytes
from refinterp.numeric.representation import MAX_TENSOR_SIZE, check_tensor_size

MAGIC = b"\x4e\xef"
VERSION = (1, 0)
HEADER_SIZE = 128
MAX_RANK = 8
FLOAT, UINT, QUINT, QINT, INT, BOOL = range(6)
ITEM_TYPE_NAMES = {FLOAT: "float", UINT: "uint", QUINT: "quantized uint", QINT: "quantized int",
                   INT: "int", BOOL: "bool"}
_INT_KINDS = {UINT: "u", QUINT: "u", QINT: "i", INT: "i"}


def item_kind(item_type: int) -> str:
    """The refinterp type a file's items are read as: 'real', 'int' or 'bool'."""
    return "real" if item_type == FLOAT else "bool" if item_type == BOOL else "int"


def _payload_dtype(path: Path, item_type: int, bits: int) -> np.dtype | None:
    """The NumPy dtype of the payload items (None for 1-bit packed bools)."""
    if item_type == FLOAT and bits in (16, 32, 64):
        return np.dtype(f"<f{bits // 8}")
    if item_type in _INT_KINDS and bits in (8, 16, 32, 64):
        return np.dtype(f"<{_INT_KINDS[item_type]}{bits // 8}")
    if item_type == BOOL and bits in (1, 8):
        return None if bits == 1 else np.dtype("u1")
    name = ITEM_TYPE_NAMES.get(item_type, f"code {item_type:#x}")
    raise TensorFileDiagnostic(f"'{path}': {bits}-bit {name} items are not supported")


def read_tensor(path: str | Path, max_size: int = MAX_TENSOR_SIZE,
                what: str = "the tensor file") -> np.ndarray:
    """Read an NNEF tensor file; the result is float64, int64 or bool. Only a regular file is
    read (`core.files.open_regular`: a FIFO or a device is refused unread, E0800, `what`
    naming the file's role). The header is read and checked first: a tensor that would take
    more than `max_size` bytes as refinterp holds it (E1200), or a file whose size is not what
    its header announces, is a diagnostic naming the file before any data is read."""
    path = Path(path)
    with open_regular(path, what) as file:
        try:
            head = file.read(HEADER_SIZE)
            shape, item_type, bits, length = _header(path, head)
            volume = math.prod(shape)
            expected = (volume * bits + 7) // 8
            size = os.fstat(file.fileno()).st_size - HEADER_SIZE
            if length != expected or size != length:
                truncated = " is truncated:" if size < min(length, expected) else ":"
                raise TensorFileDiagnostic(
                    f"'{path}'{truncated} the data length does not match the header",
                    notes=[f"header: extents {list(shape)}, {bits} bits per item → {expected} "
                           f"bytes; data length field {length}; file holds {size} bytes"])
            check_tensor_size(item_kind(item_type), shape, max_size, f"the tensor file '{path}'")
            data = file.read(length)
        except OSError as exc:
            raise TensorFileDiagnostic(f"cannot read '{path}': {exc.strerror or exc}") from None
    if len(data) != length:  # the file shrank while it was read
        raise TensorFileDiagnostic(f"'{path}' is truncated: {len(data)} of {length} data bytes")
    dtype = _payload_dtype(path, item_type, bits)
    payload = np.frombuffer(data, dtype=np.uint8)
    if dtype is None:
        items = np.unpackbits(payload, bitorder="big")[:volume].astype(np.bool_)
    else:
        items = payload.view(dtype)[:volume]
    array = items.reshape(shape)
    kind = item_kind(item_type)
    return array.astype({"real": np.float64, "int": np.int64, "bool": np.bool_}[kind])


def _header(path: Path, head: bytes) -> tuple[tuple[int, ...], int, int, int]:
    """(extents, item type, bits per item, data length) from a file's first bytes, checked."""
    if head[:2] != MAGIC:
        raise TensorFileDiagnostic(f"'{path}' is not an NNEF tensor file (bad magic number)")
    if len(head) < HEADER_SIZE:
        raise TensorFileDiagnostic(f"'{path}' is truncated: {len(head)} bytes, shorter than "
                                   f"the {HEADER_SIZE}-byte header")
    major, minor = head[2], head[3]
    if (major, minor) != VERSION:
        raise TensorFileDiagnostic(f"'{path}': unsupported tensor file version {major}.{minor}")
    length, rank = struct.unpack_from("<II", head, 4)
    if rank > MAX_RANK:
        raise TensorFileDiagnostic(f"'{path}': rank {rank} exceeds the maximum {MAX_RANK}")
    shape = struct.unpack_from(f"<{rank}I", head, 12)
    bits, item_type = struct.unpack_from("<II", head, 44)
    reserved0, = struct.unpack_from("<I", head, 52)
    if item_type == UINT and reserved0 != 0:
        item_type = INT
    _payload_dtype(path, item_type, bits)  # a supported item type
    return shape, item_type, bits, length


def write_tensor(path: str | Path, array: np.ndarray, what: str = "the tensor file") -> None:
    """Write an array as an NNEF tensor file (64-bit floats and ints, 1-bit bools), atomically
    (`core.files.write_bytes`: a failed write leaves the old file whole; a device, FIFO or
    dangling symbolic link is refused, E0801, `what` naming the file's role)."""
    array = np.asarray(array)
    if array.ndim > MAX_RANK:
        raise TensorFileDiagnostic(f"cannot write '{path}': rank {array.ndim} exceeds "
                                   f"{MAX_RANK}")
    kind = array.dtype.kind
    if kind == "b":
        item_type, bits = BOOL, 1
        payload = np.packbits(array.reshape(-1), bitorder="big").tobytes()
    elif kind in "iu":
        item_type, bits = INT, 64
        payload = array.astype("<i8").tobytes()
    elif kind == "f":
        item_type, bits = FLOAT, 64
        payload = array.astype("<f8").tobytes()
    else:
        raise TensorFileDiagnostic(f"cannot write '{path}': dtype {array.dtype}")
    extents = list(array.shape) + [0] * (MAX_RANK - array.ndim)
    header = MAGIC + bytes(VERSION) + struct.pack(
        f"<II{MAX_RANK}III", len(payload), array.ndim, *extents, bits, item_type)
    header += bytes(HEADER_SIZE - len(header))
    write_bytes(path, header + payload, what)
