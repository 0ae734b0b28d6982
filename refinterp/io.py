"""Reading and writing the user's data files: the one place every command and the Python API
go through for `.npz` archives, `.npy` arrays and folders of NNEF `.dat` tensor files.

Reading never lets a Python exception escape for a bad file: a missing, empty, truncated or
damaged file, a zip member that is no `.npy` array, or an array that is no real, int or bool
array becomes a `FileDiagnostic` naming the file (and, in an archive, the member). Arrays come
back in refinterp's representation (`refinterp.numeric.representation`: float64, int64, bool).

Only regular files are read (`core.files.open_regular`: a FIFO, a device, a socket is refused
before a byte is read), and every read is bounded before it is made (docs/limits.md, docs/
security.md "Files refinterp reads"): an `.npy` header is at most `MAX_NPY_HEADER` bytes and
its shape at most `MAX_RANK` non-negative ints; an array that would take more than
`max_tensor_size` bytes in refinterp's representation is refused from its header, before its
data is read (E1200); an `.npz` archive is checked from its central directory before anything
is decompressed — at most `MAX_ARCHIVE_MEMBERS` members, at most `max_input_size` bytes
uncompressed in all, every member's local header naming the member its directory entry names,
no two members sharing bytes — and each member is read against the size its entry declares (a
member that inflates past it is refused); a folder of `.dat` files holds at most
`MAX_ARCHIVE_MEMBERS` files and `max_input_size` bytes.

Writing is checked before any computation (`check_writable`, on `core.files.output_target`)
and is atomic (`core.files.write_bytes`): a device, a FIFO or a dangling symbolic link is never
replaced or followed, and a failed write leaves the old file whole.

Packs: a pack `xs` of arrays is stored as the keys `xs.0`, `xs.1`, ... (`flatten_packs`), and
read back as a list (`group_packs`). An empty pack has no keys, so it is not stored.

Codes: E0800 a file cannot be read, is damaged or is above a limit of reading, E0801 a file
cannot be written, E0802 an array of an unsupported dtype, E0900 array keys that do not form
valid packs, E1200 an array above the tensor size limit.
"""

from __future__ import annotations

import io
import math
import os
import zipfile
import zlib
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np

from refinterp.core.diagnostics import Diagnostic, FileDiagnostic
from refinterp.core.files import (open_regular, output_target, read_text, safe_component,
                                  write_bytes)
from refinterp.core.source import SourceFile, Span
from refinterp.numeric.representation import (INT64_MAX, MAX_RANK, MAX_TENSOR_SIZE,
                                              canonical, check_tensor_size, format_bytes,
                                              kind_of)
from refinterp.numeric.tensorfile import write_tensor
from refinterp.run.params import read_tensor_cached

NPY_MAGIC = b"\x93NUMPY"
ZIP_MAGIC = b"PK"
_INT64_MAX = INT64_MAX
_KIND_NAMES = {"U": "text", "S": "bytes", "c": "complex", "V": "structured or raw",
               "M": "datetime", "m": "timedelta", "O": "Python object"}

# The limits of reading files (docs/limits.md, "Reading files"). MAX_INPUT_SIZE: the bytes one
# .npy file, .npz archive (its members uncompressed) or .dat folder may hold (--max-input-size,
# max_input_size=); the others are fixed.
MAX_INPUT_SIZE = 4 * 2**30
MAX_ARCHIVE_MEMBERS = 100_000  # members of one .npz archive, .dat files of one folder
MAX_DIRECTORY_SIZE = 64 * 2**20  # bytes of an .npz archive's central directory
MAX_NPY_HEADER = 10_000  # bytes of an .npy header (numpy's own limit)
MAX_JSON_BYTES = 256 * 2**20  # a manifest or report larger than this is no manifest


# ---------------------------------------------------------------------------------------------
# reading


@dataclass(frozen=True)
class _Source:
    """An array file being read: its path and role (for messages), how its arrays are kept,
    and the limits it is read within."""

    path: Path
    what: str
    keep_dtype: bool = False
    max_tensor_size: int = MAX_TENSOR_SIZE
    max_input_size: int = MAX_INPUT_SIZE

    def fail(self, reason: str, member: str | None = None, code: str = "E0800",
             notes: list[str] | None = None) -> FileDiagnostic:
        """`cannot read WHAT 'PATH': REASON` (about `member` of an archive, if given)."""
        diag = _fail(self.what, self.path, reason, code) if member is None else \
            _fail_array(self.what, self.path, member, reason, code)
        diag.notes.extend(notes or [])
        return diag

    def too_large(self, reason: str) -> FileDiagnostic:
        """A file above the input size limit (E0800), with how to raise the limit."""
        return self.fail(f"{reason}, above the input size limit of "
                         f"{format_bytes(self.max_input_size)}",
                         notes=["raise the limit with --max-input-size (refinterp.io: "
                                "max_input_size=); see docs/limits.md"])


def read_arrays(path: str | Path, what: str, *, keep_dtype: bool = False,
                max_tensor_size: int = MAX_TENSOR_SIZE,
                max_input_size: int = MAX_INPUT_SIZE) -> dict[str, np.ndarray]:
    """The arrays of an `.npz` archive (keyed by member name without `.npy`, in archive order)
    or of a single `.npy` file (keyed by the file's stem). `what` names the file's role in
    messages, e.g. "--inputs". With `keep_dtype` the arrays keep their stored dtype (a back
    end's float32 outputs, for the harness) instead of refinterp's representation. An array
    that would take more than `max_tensor_size` bytes as refinterp holds it is a diagnostic
    (E1200), before its data is read; a file holding more than `max_input_size` bytes
    (uncompressed) is one (E0800) before anything is read or decompressed."""
    source = _Source(Path(path), what, keep_dtype, max_tensor_size, max_input_size)
    with open_regular(source.path, what) as stream:
        if _sniff(stream, source) == "npy":
            return {source.path.stem: _read_npy_file(stream, source)}
        return _read_npz(stream, source)


def read_array(path: str | Path, what: str, *, max_tensor_size: int = MAX_TENSOR_SIZE,
               max_input_size: int = MAX_INPUT_SIZE) -> np.ndarray:
    """The array of a single `.npy` file; an `.npz` archive here is a diagnostic."""
    source = _Source(Path(path), what, False, max_tensor_size, max_input_size)
    with open_regular(source.path, what) as stream:
        if _sniff(stream, source) == "npz":
            raise source.fail("it is an .npz archive, not a single .npy array",
                              notes=["give an archive of several arrays with the archive form "
                                     "(--inputs, --params), or save one array with "
                                     "numpy.save"])
        return _read_npy_file(stream, source)


def read_params(path: str | Path, what: str = "--params", *,
                max_tensor_size: int = MAX_TENSOR_SIZE,
                max_input_size: int = MAX_INPUT_SIZE) -> dict[str, np.ndarray]:
    """Variable values: an `.npz` archive, or a folder of NNEF `.dat` tensor files keyed by
    file name without `.dat` (an empty folder gives no values)."""
    source = _Source(Path(path), what, False, max_tensor_size, max_input_size)
    if _is_folder(source.path):
        return _read_dat_folder(source)
    with open_regular(source.path, what) as stream:
        if _sniff(stream, source) == "npy":
            raise source.fail(f"it is a single .npy array; {what} takes an .npz archive or a "
                              f"folder of .dat files")
        return _read_npz(stream, source)


def _is_folder(path: Path) -> bool:
    """Whether `path` is a folder; a path the system refuses (a name too long) is not."""
    try:
        return path.is_dir()
    except (OSError, ValueError):
        return False


def read_json(path: str | Path, what: str) -> Any:
    """The data of a JSON file (a golden manifest, a harness report). A missing, unreadable,
    oversized (above `MAX_JSON_BYTES`, counted while reading), non-UTF-8 or invalid file — also
    one nested too deeply to decode — is a FileDiagnostic naming the file (at the line and
    column of a syntax error); a FIFO or a device is refused unread (`core.files`)."""
    path = Path(path)
    text = read_text(path, what, MAX_JSON_BYTES)
    import json  # only here (start-up time: a run reads no JSON)

    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        source = SourceFile(str(path), text)
        span = Span(source, exc.lineno, exc.colno, exc.lineno, exc.colno + 1)
        raise FileDiagnostic(f"cannot read {what} '{path}': invalid JSON ({exc.msg})",
                             span=span) from None
    except (RecursionError, ValueError) as exc:
        raise _fail(what, path, f"invalid JSON ({_reason(exc)})") from None


def _fail(what: str, path: Path, reason: str, code: str = "E0800") -> FileDiagnostic:
    """A diagnostic `cannot read WHAT 'PATH': REASON`."""
    return FileDiagnostic(f"cannot read {what} '{path}': {reason}", code=code)


def _fail_array(what: str, path: Path, member: str | None, reason: str,
                code: str = "E0800") -> FileDiagnostic:
    """A diagnostic about one array: `member 'M' REASON` in an archive, else `the file
    REASON`."""
    subject = f"member '{member}'" if member is not None else "the file"
    return _fail(what, path, f"{subject} {reason}", code)


def _reason(exc: BaseException) -> str:
    """A short description of a loader's exception (its message's first line, or its class
    name)."""
    message = exc.args[0] if exc.args and isinstance(exc.args[0], str) else str(exc)
    lines = message.strip().splitlines()
    reason = lines[0] if lines else type(exc).__name__
    return reason if len(reason) <= 160 else reason[:157] + "..."


def _sniff(stream: BinaryIO, source: _Source) -> str:
    """'npz' or 'npy' by the first bytes of the open file (left at its start); an empty or
    other file is a diagnostic."""
    try:
        start = stream.read(len(NPY_MAGIC))
        stream.seek(0)
    except OSError as exc:
        raise source.fail(exc.strerror or _reason(exc)) from None
    if not start:
        raise source.fail("the file is empty")
    if start.startswith(ZIP_MAGIC):
        return "npz"
    if start == NPY_MAGIC:
        return "npy"
    raise source.fail("not an .npz archive or .npy array (unknown file format)")


def _read_npy_file(stream: BinaryIO, source: _Source) -> np.ndarray:
    """The array of an open `.npy` file, no larger than the input size limit."""
    try:
        size = os.fstat(stream.fileno()).st_size  # a regular file's (open_regular)
    except OSError as exc:
        raise source.fail(exc.strerror or _reason(exc)) from None
    if size > source.max_input_size:
        raise source.too_large(f"the file holds {format_bytes(size)}")
    return _read_npy(stream, size, source, None)


# ------------------------------------------------------------------------------- archives


def _read_npz(stream: BinaryIO, source: _Source) -> dict[str, np.ndarray]:
    """The arrays of an open `.npz` archive, member by member, once its central directory is
    checked (`_members`)."""
    members = _members(stream, source)
    return {info.filename[:-len(".npy")]: _read_member(stream, info, start, source)
            for info, start in members}


def _members(stream: BinaryIO, source: _Source) -> list[tuple[zipfile.ZipInfo, int]]:
    """The members of an open archive with where each one's data starts, checked before any
    is decompressed: their number, names, compression, total size and local headers, and that
    no two share bytes."""
    try:
        _count_directory(stream, source)
        with zipfile.ZipFile(stream) as archive:  # the stream stays open (it was passed)
            members = archive.infolist()
    except FileDiagnostic:
        raise
    except Exception as exc:  # BadZipFile, OSError, struct or decoding errors of a damaged file
        raise source.fail(f"not a valid .npz archive, damaged or truncated "
                          f"({_reason(exc)})") from None
    if len(members) > MAX_ARCHIVE_MEMBERS:
        raise _too_many(source, len(members))
    _check_member_names(members, source)
    for info in members:
        _check_method(info, source)
    total = sum(info.file_size for info in members)
    if total > source.max_input_size:
        raise source.too_large(f"its {len(members)} member(s) hold {format_bytes(total)} "
                               f"uncompressed")
    starts = [_data_start(stream, info, source) for info in members]
    _check_overlaps(members, starts, source)
    return list(zip(members, starts))


def _too_many(source: _Source, count: int | str) -> FileDiagnostic:
    return source.fail(f"the archive has {count} members, more than the "
                       f"{MAX_ARCHIVE_MEMBERS} an .npz may hold (docs/limits.md)")


def _count_directory(stream: BinaryIO, source: _Source) -> None:
    """Refuse an archive whose central directory is above `MAX_DIRECTORY_SIZE` bytes or holds
    more than `MAX_ARCHIVE_MEMBERS` entries, counted from its raw records before zipfile reads
    them into memory (an entry takes 46 bytes on disk and far more as a ZipInfo). An archive
    whose end record cannot be found is left to zipfile to report."""
    found = _directory_extent(stream)
    if found is None:
        return
    start, size = found
    if size > MAX_DIRECTORY_SIZE:
        raise source.fail(f"the archive's central directory takes {format_bytes(size)}, more "
                          f"than the {format_bytes(MAX_DIRECTORY_SIZE)} an .npz may have "
                          f"(docs/limits.md)")
    stream.seek(start)
    directory = stream.read(size)
    offset = count = 0
    while offset + 46 <= len(directory) and directory[offset:offset + 4] == b"PK\x01\x02":
        count += 1
        if count > MAX_ARCHIVE_MEMBERS:
            raise _too_many(source, f"more than {MAX_ARCHIVE_MEMBERS}")
        lengths = [int.from_bytes(directory[offset + at:offset + at + 2], "little")
                   for at in (28, 30, 32)]  # name, extra field, comment
        offset += 46 + sum(lengths)


_END = b"PK\x05\x06"  # end of central directory record (22 bytes and a comment)
_END64 = b"PK\x06\x06"  # zip64 end of central directory record (56 bytes)
_LOCATOR64 = b"PK\x06\x07"  # zip64 end of central directory locator (20 bytes)


def _directory_extent(stream: BinaryIO) -> tuple[int, int] | None:
    """(where the central directory starts, its size in bytes) as zipfile finds them — the
    end record last in the file or before a comment, the zip64 record just before it — or
    None if there is no end record."""
    stream.seek(0, os.SEEK_END)
    file_size = stream.tell()
    tail_size = min(file_size, 22 + 0xFFFF)
    stream.seek(file_size - tail_size)
    tail = stream.read(tail_size)
    at = len(tail) - 22 if tail[-22:-18] == _END and tail[-2:] == b"\0\0" else tail.rfind(_END)
    if at < 0 or len(tail) - at < 22:
        return None
    end = file_size - tail_size + at
    size = int.from_bytes(tail[at + 12:at + 16], "little")
    if end >= 20 + 56:
        stream.seek(end - 20 - 56)
        record = stream.read(56 + 20)
        if record[56:60] == _LOCATOR64 and record[:4] == _END64:
            size = int.from_bytes(record[40:48], "little")
            end -= 20 + 56
    return max(0, end - size), size


def _check_member_names(members: list[zipfile.ZipInfo], source: _Source) -> None:
    for info in members:
        if not info.filename.endswith(".npy"):
            raise source.fail("is not an .npy array (an .npz archive holds only .npy members)",
                              info.filename)
    for name, count in Counter(info.filename for info in members).items():
        if count > 1:
            raise source.fail(f"appears {count} times", name)


def _check_method(info: zipfile.ZipInfo, source: _Source) -> None:
    """Members are stored or deflated (what numpy.savez and numpy.savez_compressed write), and
    not encrypted."""
    if info.flag_bits & 0x1:
        raise source.fail("is encrypted", info.filename)
    if info.compress_type not in _MEMBER_READERS:
        raise source.fail(f"is compressed with zip method {info.compress_type}; refinterp "
                          f"reads stored and deflated members (what numpy.savez and "
                          f"numpy.savez_compressed write)", info.filename)
    if info.compress_type == zipfile.ZIP_STORED and info.compress_size != info.file_size:
        raise source.fail(f"is damaged (a stored member of {info.file_size} bytes takes "
                          f"{info.compress_size} bytes in the archive)", info.filename)


def _data_start(stream: BinaryIO, info: zipfile.ZipInfo, source: _Source) -> int:
    """Where the member's data starts: after its local header, which must name the member
    the directory entry names (an archive whose entries point into another member's data
    could otherwise hide what it holds)."""
    try:
        stream.seek(info.header_offset)
        header = stream.read(30)
        if len(header) != 30 or header[:4] != b"PK\x03\x04":
            raise source.fail("is damaged (no local header where the directory says)",
                              info.filename)
        name_size = int.from_bytes(header[26:28], "little")
        extra_size = int.from_bytes(header[28:30], "little")
        raw_name = stream.read(name_size)
    except OSError as exc:
        raise source.fail(f"is damaged ({exc.strerror or _reason(exc)})", info.filename) \
            from None
    utf8 = int.from_bytes(header[6:8], "little") & 0x800
    name = raw_name.decode("utf-8" if utf8 else "cp437", errors="replace")
    if name != info.orig_filename:
        raise source.fail(f"is named {name!r} in its local header: the archive's entries "
                          f"do not match its data", info.filename)
    return info.header_offset + 30 + name_size + extra_size


def _check_overlaps(members: list[zipfile.ZipInfo], starts: list[int],
                    source: _Source) -> None:
    """No two members share bytes of the file (from a member's local header to the end of
    its data): overlapping members let a small archive announce far more data than it holds."""
    extents = sorted((info.header_offset, start + info.compress_size, info.filename)
                     for info, start in zip(members, starts))
    for (_, end, name), (begin, _, other) in zip(extents, extents[1:]):
        if begin < end:
            raise source.fail(f"members '{name}' and '{other}' overlap (bytes {begin} to "
                              f"{end - 1} belong to both)")


def _read_member(stream: BinaryIO, info: zipfile.ZipInfo, start: int,
                 source: _Source) -> np.ndarray:
    """The array of one member, read to the member's declared end (its CRC-32 checked)."""
    member = _MEMBER_READERS[info.compress_type](stream, start, info)
    array = _read_npy(member, info.file_size, source, info.filename)
    try:
        member.finish()
    except _READ_ERRORS as exc:
        raise _damaged(source, info.filename, exc) from None
    return array


class _Member(io.RawIOBase):
    """A member of a zip archive read from the archive's open file: its bytes are counted
    against the size its directory entry declares, and when it has been read to that end
    (`finish`) nothing more may follow and its CRC-32 must match, as zipfile checks."""

    def __init__(self, file: BinaryIO, start: int, info: zipfile.ZipInfo) -> None:
        super().__init__()
        self.file, self.offset, self.left = file, start, info.compress_size  # raw data
        self.size, self.expected = info.file_size, info.CRC
        self.position, self.crc = 0, 0

    def readable(self) -> bool:
        return True

    def tell(self) -> int:
        return self.position

    def readinto(self, buffer: Any) -> int:
        view = memoryview(buffer).cast("B")
        wanted = min(len(view), self.size - self.position)
        got = self._fill(view[:wanted]) if wanted > 0 else 0
        self.crc = zlib.crc32(view[:got], self.crc)
        self.position += got
        return got

    def read(self, size: int | None = -1) -> bytes:
        wanted = self.size - self.position if size is None or size < 0 else size
        buffer = bytearray(max(0, min(wanted, self.size - self.position)))
        got = self.readinto(buffer) if buffer else 0
        return bytes(buffer[:got])

    def finish(self) -> None:
        """Read the member to its declared end; check that it ends there and its CRC-32."""
        chunk = bytearray(min(_CHUNK, max(1, self.size - self.position)))
        while self.position < self.size:
            if not self.readinto(chunk):
                raise EOFError("the data ends early")
        self._check_end()
        if self.crc != self.expected:
            raise zipfile.BadZipFile("Bad CRC-32")

    def _raw(self, count: int) -> bytes:
        """The next at most `count` bytes of the member's data as the archive holds them."""
        self.file.seek(self.offset)
        data = self.file.read(min(count, self.left))
        self.offset += len(data)
        self.left -= len(data)
        return data

    def _fill(self, view: memoryview) -> int:
        raise NotImplementedError

    def _check_end(self) -> None:
        pass


class _StoredMember(_Member):
    """An uncompressed (stored) member, read straight from the file into the caller's buffer
    (zipfile's member stream copies every chunk through bytes objects: a 466 MB parameter
    file took 2.4x as long as np.load)."""

    def _fill(self, view: memoryview) -> int:
        self.file.seek(self.offset)
        got = self.file.readinto(view[:min(len(view), self.left)]) or 0
        self.offset += got
        self.left -= got
        return got


class _DeflatedMember(_Member):
    """A deflated member, inflated piece by piece: never more than asked for at a time, and
    refused if it inflates past the size its directory entry declares."""

    def __init__(self, file: BinaryIO, start: int, info: zipfile.ZipInfo) -> None:
        super().__init__(file, start, info)
        self.inflater = zlib.decompressobj(-zlib.MAX_WBITS)

    def _fill(self, view: memoryview) -> int:
        while not self.inflater.eof:
            data = self.inflater.unconsumed_tail or self._raw(_CHUNK)
            out = self.inflater.decompress(data, len(view))
            if out:
                view[:len(out)] = out
                return len(out)
            if not data:
                break
        return 0

    def _check_end(self) -> None:
        while not self.inflater.eof:
            data = self.inflater.unconsumed_tail or self._raw(_CHUNK)
            if not data:
                raise EOFError("the compressed data ends early")
            if self.inflater.decompress(data, 1):
                raise zipfile.BadZipFile(f"it inflates past the {self.size} bytes its "
                                         f"directory entry declares")


_MEMBER_READERS = {zipfile.ZIP_STORED: _StoredMember, zipfile.ZIP_DEFLATED: _DeflatedMember}

# what reading a file or an archive member may raise: BadZipFile (Bad CRC-32), zlib.error, EOFError
_READ_ERRORS = (zipfile.BadZipFile, zlib.error, EOFError, OSError)


def _damaged(source: _Source, member: str | None, exc: BaseException) -> FileDiagnostic:
    reason = _reason(exc).split(" for file ")[0]   # "Bad CRC-32 for file 'a.npy'"
    return _fail_array(source.what, source.path, member, f"is damaged ({reason})")


# ------------------------------------------------------------------------------- .npy arrays


def _read_npy(stream: BinaryIO, size: int, source: _Source, member: str | None) -> np.ndarray:
    """The array of an `.npy` stream of `size` bytes in refinterp's representation: the header
    is read, and the dtype, the shape, the length and the tensor size limit checked, before any
    data is read (object arrays are never unpickled)."""
    shape, fortran, dtype = _npy_header(stream, source, member)
    _check_dtype(dtype, source, member)
    count = math.prod(shape)
    needed, available = count * dtype.itemsize, size - stream.tell()
    if needed > available:
        raise _fail_array(source.what, source.path, member,
                          f"is truncated or damaged: the header announces shape "
                          f"{list(shape)} of {dtype} ({needed} bytes) but {available} bytes "
                          f"follow")
    check_tensor_size(kind_of(dtype), shape, source.max_tensor_size, f"{source.what} "
                      f"'{source.path}'" + (f" member '{member}'" if member is not None else ""))
    try:
        flat = np.empty(count, dtype=dtype)
        _read_into(stream, flat)
    except Exception as exc:  # _READ_ERRORS, MemoryError, ...
        raise _damaged(source, member, exc) from None
    array = flat.reshape(shape, order="F" if fortran else "C")
    if source.keep_dtype:  # native order (a copy only if the file's order is not)
        return array.astype(array.dtype.newbyteorder("="), copy=False)
    return _to_canonical(array, source, member)


def _npy_header(stream: BinaryIO, source: _Source,
                member: str | None) -> tuple[tuple[int, ...], bool, np.dtype]:
    """(shape, Fortran order, dtype) of an `.npy` stream's header, read within
    `MAX_NPY_HEADER` bytes (numpy would read a version 2 header of up to 4 GiB before refusing
    it) and checked: at most `MAX_RANK` extents, each a non-negative int (not a bool) that
    NumPy can hold."""
    def bad(reason: str) -> FileDiagnostic:
        return _fail_array(source.what, source.path, member,
                           f"is not a valid .npy array: bad header ({reason})")

    try:
        prefix = _read_exactly(stream, len(NPY_MAGIC) + 2)
        if prefix[:len(NPY_MAGIC)] != NPY_MAGIC:
            raise bad("no .npy magic string")
        version = (prefix[-2], prefix[-1])
        if version not in ((1, 0), (2, 0), (3, 0)):
            raise bad(f"unknown version {version[0]}.{version[1]}")
        width = _read_exactly(stream, 2 if version == (1, 0) else 4)
        length = int.from_bytes(width, "little")
        if length > MAX_NPY_HEADER:
            raise bad(f"{length} bytes, more than the {MAX_NPY_HEADER} numpy reads")
        header = _read_exactly(stream, length)
    except _READ_ERRORS as exc:  # the file or archive fails, not the header
        raise _damaged(source, member, exc) from None
    reader = np.lib.format.read_array_header_1_0 if version == (1, 0) else \
        np.lib.format.read_array_header_2_0  # 3.0 has 2.0's layout (utf-8 field names)
    try:
        shape, fortran, dtype = reader(io.BytesIO(width + header))
    except Exception as exc:  # ValueError, SyntaxError, tokenize.TokenError, ...
        raise bad(_reason(exc)) from None
    if len(shape) > MAX_RANK:
        raise bad(f"rank {len(shape)}, above NumPy's {MAX_RANK} dimensions")
    for extent in shape:
        if type(extent) is not int or not 0 <= extent <= _INT64_MAX:
            raise bad(f"extent {extent!r}: an extent is an int from 0 to 2**63 - 1")
    if math.prod(max(extent, 1) for extent in shape) > _INT64_MAX // max(dtype.itemsize, 1):
        raise bad(f"shape {list(shape)} of {dtype}: more bytes than any array can hold")
    return shape, fortran, dtype


def _read_exactly(stream: BinaryIO, count: int) -> bytes:
    data = stream.read(count)
    if len(data) != count:
        raise EOFError("the data ends early")
    return data


_CHUNK = 1 << 20  # bytes read at a time into an array: the source of each copy stays in cache


def _read_into(stream: BinaryIO, flat: np.ndarray) -> None:
    """Fill `flat` (a fresh array) with the next bytes of `stream`. The data is read into the
    array itself, chunk by chunk, rather than into one bytes object that is then copied
    (parameters of hundreds of megabytes: docs/performance.md, "Whole models")."""
    buffer = memoryview(flat.view(np.uint8)) if flat.size else memoryview(b"")
    filled = 0
    while filled < len(buffer):
        got = stream.readinto(buffer[filled:filled + _CHUNK])
        if not got:
            raise EOFError("the data ends early")
        filled += got


def _check_dtype(dtype: np.dtype, source: _Source, member: str | None) -> None:
    if dtype.kind not in "fiub" or dtype.hasobject:
        kind = _KIND_NAMES.get(dtype.kind, "unsupported")
        raise _fail_array(source.what, source.path, member, f"has dtype {dtype} ({kind}), "
                          f"which is not a real, int or bool array", code="E0802")


def _to_canonical(array: np.ndarray, source: _Source, member: str | None) -> np.ndarray:
    """float → float64, int/uint → int64 (uint64 values must fit), bool; always writable."""
    if array.dtype.kind == "u" and array.size and int(array.max()) > _INT64_MAX:
        raise _fail_array(source.what, source.path, member, f"has {array.dtype} values above "
                          f"the int64 range", code="E0802")
    result = canonical(array)
    return result if result.flags.writeable else result.copy()


# ------------------------------------------------------------------------------- .dat folders


def _read_dat_folder(source: _Source) -> dict[str, np.ndarray]:
    """The tensors of a folder's `.dat` files, keyed by file name without `.dat`: at most
    `MAX_ARCHIVE_MEMBERS` files of at most `max_input_size` bytes in all, checked before any is
    read."""
    folder = source.path
    try:
        files = sorted(p for p in folder.iterdir() if p.name.endswith(".dat"))
        if len(files) > MAX_ARCHIVE_MEMBERS:
            raise source.fail(f"the folder has {len(files)} .dat files, more than the "
                              f"{MAX_ARCHIVE_MEMBERS} it may hold (docs/limits.md)")
        total = sum(_size_of(p) for p in files)
    except OSError as exc:
        raise source.fail(exc.strerror or _reason(exc)) from None
    if total > source.max_input_size:
        raise source.too_large(f"its {len(files)} .dat files hold {format_bytes(total)}")
    return {p.name[:-len(".dat")]: _read_dat(p, source) for p in files}


def _size_of(path: Path) -> int:
    """The size a file says it has (0 for a FIFO or a device: `read_tensor` refuses those)."""
    try:
        return path.stat().st_size
    except FileNotFoundError:
        return 0


def _read_dat(path: Path, source: _Source) -> np.ndarray:
    try:
        return read_tensor_cached(path, source.max_tensor_size, source.what)
    except FileDiagnostic:
        raise  # it names the file and its role already
    except Diagnostic as diag:
        raise FileDiagnostic(f"cannot read {source.what}: {diag.message}", notes=diag.notes,
                             code=diag.code) from None
    except Exception as exc:  # a header whose numbers no array can have
        raise _fail_array(source.what, path, None, f"is damaged ({_reason(exc)})") from None


# ---------------------------------------------------------------------------------------------
# writing


def check_writable(path: str | Path, what: str, *, folder_ok: bool = False) -> Path:
    """Check, before any computation, that `path` can be written (`core.files.output_target`:
    its folder exists and is writable; an existing device, FIFO, socket, folder or dangling
    symbolic link is refused, E0801). With `folder_ok` (`--write-params DIR`, `--save-case`) a
    path not ending in `.npz` names a folder, existing or to be created in an existing
    parent."""
    path = Path(path)
    if not (folder_ok and path.suffix != ".npz"):
        output_target(path, what)
        return path
    if _is_folder(path):
        if not os.access(path, os.W_OK | os.X_OK):
            raise _unwritable(what, path, f"folder '{path}' is not writable")
        return path
    if os.path.lexists(path):
        output_target(path, what)  # a dangling link, a device, a FIFO: said as such
        raise _unwritable(what, path, "it exists and is not a folder")
    output_target(path, what)  # its parent folder
    return path


def _unwritable(what: str, path: Path, reason: str) -> FileDiagnostic:
    return FileDiagnostic(f"cannot write {what} '{path}': {reason}", code="E0801")


def write_arrays(path: str | Path, arrays: dict[str, Any], what: str) -> None:
    """Write arrays as an uncompressed `.npz` archive (`encode_npz`) to exactly `path` (no
    suffix is added), atomically (`core.files.write_bytes`); keys keep their order, packs
    (lists) are flattened to `xs.0`, `xs.1`, ..."""
    write_bytes(path, encode_npz(flatten_packs(arrays)), what)


# The byte layout of what refinterp writes (docs/golden.md, "Array files"): identical bytes for
# identical arrays, whatever the NumPy version, the clock or the machine.
_NPY_DESCR = {"f": "<f8", "i": "<i8", "b": "|b1"}
_ZIP_TIME = (1980, 1, 1, 0, 0, 0)  # the earliest time a zip entry can hold


def encode_npy(array: Any) -> bytes:
    """An array (real, int or bool; held as float64, int64, bool) as `.npy` format 1.0 bytes:
    the magic, version 1.0, a little-endian uint16 header length, the header
    `{'descr': D, 'fortran_order': False, 'shape': S, }` padded with spaces and ending in a
    newline so that the data starts at a multiple of 64 bytes, then the elements in C order,
    little-endian. Every NaN is written as the one quiet NaN 0x7ff8000000000000: a NaN's sign
    and payload carry no meaning in SkriptND and depend on the order of operations (x86 gives
    inf - inf a negative NaN, and an operation passes on its first NaN operand), so writing
    them as computed would make identical runs write different bytes."""
    array = canonical(np.asarray(array))
    if array.dtype.kind == "f":
        nans = np.isnan(array)
        if nans.any():
            array = np.where(nans, np.nan, array)
    descr = _NPY_DESCR[array.dtype.kind]
    shape = "(" + "".join(f"{n}, " for n in array.shape)[:-2] + \
        ("," if array.ndim == 1 else "") + ")"
    header = "{'descr': '%s', 'fortran_order': False, 'shape': %s, }" % (descr, shape)
    padding = -(len(NPY_MAGIC) + 4 + len(header) + 1) % 64
    text = (header + " " * padding + "\n").encode("latin1")
    if len(text) > 0xFFFF:
        raise ValueError(f"an array of rank {array.ndim} has too long an .npy header")
    data = np.ascontiguousarray(array, dtype=np.dtype(descr)).tobytes()
    return NPY_MAGIC + b"\x01\x00" + len(text).to_bytes(2, "little") + text + data


def encode_npz(arrays: dict[str, Any]) -> bytes:
    """Arrays as `.npz` bytes: a zip archive of `<key>.npy` members (`encode_npy`), in the
    given key order, stored uncompressed, every entry dated 1980-01-01 00:00:00 with Unix
    permissions 0644; packs (lists) flattened to `xs.0`, `xs.1`, ..."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_STORED, allowZip64=True) as zf:
        for key, array in flatten_packs(arrays).items():
            info = zipfile.ZipInfo(f"{key}.npy", date_time=_ZIP_TIME)
            info.create_system = 3
            info.external_attr = 0o644 << 16
            info.compress_type = zipfile.ZIP_STORED
            zf.writestr(info, encode_npy(array))
    return buffer.getvalue()


def write_params(destination: str | Path, arrays: dict[str, np.ndarray], what: str) -> None:
    """Write variable values: an `.npz` archive (as `write_arrays`), or a folder of
    `<name>.dat` NNEF tensor files, created if needed. Each file is replaced atomically
    (`core.files.write_bytes`): a write that fails leaves the file it was writing, and every
    file it had not reached, as it was."""
    destination = check_writable(destination, what, folder_ok=True)
    if destination.suffix == ".npz":
        write_arrays(destination, arrays, what)
        return
    try:
        destination.mkdir(exist_ok=True)
    except OSError as exc:
        raise _unwritable(what, destination, exc.strerror or _reason(exc)) from None
    for name, value in arrays.items():
        file = destination / safe_component(f"{name}.dat", f"{what} variable")
        try:
            write_tensor(file, value, what)
        except FileDiagnostic:
            raise  # it names the file and its role already
        except Diagnostic as diag:
            raise FileDiagnostic(f"cannot write {what}: {diag.message}", code="E0801") from None


# ---------------------------------------------------------------------------------------------
# packs


def flatten_packs(values: dict[str, np.ndarray | list[np.ndarray]]) -> dict[str, np.ndarray]:
    """A pack `xs` (a list or tuple of arrays) becomes the keys `xs.0`, `xs.1`, ...; other
    values keep their key. Order is kept."""
    flat: dict[str, np.ndarray] = {}
    for key, value in values.items():
        items = (((f"{key}.{i}", item) for i, item in enumerate(value))
                 if isinstance(value, (list, tuple)) else ((key, value),))
        for name, item in items:
            if name in flat:
                raise FileDiagnostic(f"array '{name}' is given twice (as an array and as a "
                                     f"pack item)", code="E0900")
            flat[name] = item
    return flat


def _pack_item(key: str) -> tuple[str, int] | None:
    """('xs', 1) for the key 'xs.1'; None for a key that is no pack item."""
    base, dot, index = key.rpartition(".")
    if not (dot and base and index.isascii() and index.isdigit()):
        return None
    if index != str(int(index)):
        raise FileDiagnostic(f"array '{key}': pack items are numbered {base}.0, {base}.1, ... "
                             f"without leading zeros", code="E0900")
    return base, int(index)


def group_packs(arrays: dict[str, Any]) -> dict[str, Any]:
    """The inverse of `flatten_packs`: keys `xs.0`, `xs.1`, ... become the pack `xs` (a list),
    placed where its first item was. Gaps in the numbering, or a name given both as `xs` and
    as `xs.0`, are diagnostics."""
    grouped: dict[str, Any] = {}
    packs: dict[str, dict[int, Any]] = {}
    for key, array in arrays.items():
        item = _pack_item(key)
        name = key if item is None else item[0]
        is_pack_item = item is not None
        if name in grouped and is_pack_item != (name in packs):
            raise FileDiagnostic(f"'{name}' is given both as an array and as pack items "
                                 f"{name}.0, {name}.1, ...", code="E0900")
        if item is None:
            grouped[key] = array
        else:
            grouped.setdefault(name, None)
            packs.setdefault(name, {})[item[1]] = array
    for name, items in packs.items():
        missing = sorted(set(range(max(items) + 1)) - set(items))
        if missing:
            raise FileDiagnostic(f"pack '{name}' has no item {name}.{missing[0]}: items are "
                                 f"numbered {name}.0, {name}.1, ... without gaps", code="E0900")
        grouped[name] = [items[i] for i in range(len(items))]
    return grouped
