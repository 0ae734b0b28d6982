"""The NNEF binary tensor format (refinterp/tensorfile.py), checked against files built byte by
byte from the format description (testsupport/nnef_files.py: 128-byte header, little-endian
payload)."""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np
import pytest

from refinterp.core.diagnostics import Diagnostic
from refinterp.numeric.tensorfile import read_tensor, write_tensor
from testsupport.nnef_files import header


def write_file(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


@pytest.mark.parametrize("fmt,bits,code,kind", [
    ("<f4", 32, 0, np.float64), ("<f8", 64, 0, np.float64), ("<f2", 16, 0, np.float64),
    ("<i1", 8, 4, np.int64), ("<i2", 16, 4, np.int64), ("<i4", 32, 4, np.int64),
    ("<i8", 64, 4, np.int64), ("<u1", 8, 1, np.int64), ("<u2", 16, 1, np.int64),
    ("<u4", 32, 1, np.int64), ("<u1", 8, 2, np.int64), ("<i1", 8, 3, np.int64),
])
def test_reads_every_item_type(tmp_path: Path, fmt: str, bits: int, code: int, kind) -> None:
    values = np.arange(-3, 9).reshape(3, 4)
    if fmt.startswith("<u"):
        values = values + 3
    payload = values.astype(fmt).tobytes()
    path = write_file(tmp_path / "t.dat", header((3, 4), bits, code) + payload)
    array = read_tensor(path)
    assert array.dtype == kind and array.shape == (3, 4)
    assert np.array_equal(array, values)


def test_reads_packed_and_byte_bools(tmp_path: Path) -> None:
    bits = [True, False, True, True, False, False, False, True, True, False]
    packed = bytes([0b10110001, 0b10000000])  # first item in the most significant bit
    path = write_file(tmp_path / "b.dat", header((2, 5), 1, 5) + packed)
    assert read_tensor(path).tolist() == np.array(bits).reshape(2, 5).tolist()
    path = write_file(tmp_path / "b8.dat", header((10,), 8, 5) + bytes(int(b) for b in bits))
    assert read_tensor(path).tolist() == bits


def test_rank_zero_and_legacy_signed_uint(tmp_path: Path) -> None:
    path = write_file(tmp_path / "s.dat", header((), 32, 0) + struct.pack("<f", 2.5))
    scalar = read_tensor(path)
    assert scalar.shape == () and scalar == 2.5
    legacy = header((2,), 8, 1, reserved0=1) + np.array([-1, 5], "<i1").tobytes()
    assert read_tensor(write_file(tmp_path / "l.dat", legacy)).tolist() == [-1, 5]


def test_write_then_parse_independently(tmp_path: Path) -> None:
    values = np.linspace(-1, 1, 24).reshape(2, 3, 4)
    write_tensor(tmp_path / "w.dat", values)
    data = (tmp_path / "w.dat").read_bytes()
    assert data[:4] == bytes([0x4E, 0xEF, 1, 0])
    words = struct.unpack_from("<31I", data, 4)
    assert words[0] == 24 * 8 and words[1] == 3 and words[2:5] == (2, 3, 4)
    assert words[10] == 64 and words[11] == 0  # bits, float
    assert np.array_equal(np.frombuffer(data[128:], "<f8").reshape(2, 3, 4), values)
    flags = np.array([[True, False, True], [False, False, True]])
    write_tensor(tmp_path / "f.dat", flags)
    data = (tmp_path / "f.dat").read_bytes()
    assert struct.unpack_from("<2I", data, 44) == (1, 5) and data[128:] == bytes([0b10100100])
    ints = np.array([-(2 ** 40), 7])
    write_tensor(tmp_path / "i.dat", ints)
    assert np.array_equal(read_tensor(tmp_path / "i.dat"), ints)


@pytest.mark.parametrize("data,message", [
    (b"\x00\x01" + bytes(126), "bad magic"),
    (header((2,), 32, 0, version=(2, 0)) + bytes(8), "version 2.0"),
    (header((2,), 32, 0, length=4) + bytes(4), "data length"),
    (header((2,), 32, 0) + bytes(4), "data length"),
    (header((2,), 12, 4) + bytes(3), "12-bit int"),
    (header((2,), 32, 9) + bytes(8), "code 0x9"),
    (b"\x4e\xef", "truncated: 2 bytes"),
])
def test_invalid_files_are_diagnostics(tmp_path: Path, data: bytes, message: str) -> None:
    path = write_file(tmp_path / "bad.dat", data)
    with pytest.raises(Diagnostic, match=message):
        read_tensor(path)


def test_missing_file_is_a_diagnostic(tmp_path: Path) -> None:
    with pytest.raises(Diagnostic, match="cannot read"):
        read_tensor(tmp_path / "nope.dat")
