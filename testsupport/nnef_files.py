"""An independent writer of NNEF tensor files for tests (not refinterp's): the 128-byte header
(magic 0x4E 0xEF, version 1.0, data length, rank, 8 extents, bits per item, item type, 19
reserved words) and a little-endian payload."""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np


def header(shape: tuple[int, ...], bits: int, item_type: int, length: int | None = None,
           version: tuple[int, int] = (1, 0), reserved0: int = 0) -> bytes:
    volume = int(np.prod(shape)) if shape else 1
    if length is None:
        length = (volume * bits + 7) // 8
    extents = list(shape) + [0] * (8 - len(shape))
    words = [length, len(shape), *extents, bits, item_type, reserved0] + [0] * 18
    data = bytes([0x4E, 0xEF, *version]) + struct.pack("<31I", *words)
    assert len(data) == 128
    return data


def write_dat(path: Path, array: np.ndarray) -> None:
    """Write float32 for reals (as the Khronos tools do), int32 for ints, 1-bit bools."""
    array = np.asarray(array)
    if array.dtype.kind == "f":
        payload, bits, code = array.astype("<f4").tobytes(), 32, 0
    elif array.dtype.kind in "iu":
        payload, bits, code = array.astype("<i4").tobytes(), 32, 4
    else:
        payload, bits, code = np.packbits(array.reshape(-1)).tobytes(), 1, 5
    Path(path).write_bytes(header(array.shape, bits, code) + payload)
