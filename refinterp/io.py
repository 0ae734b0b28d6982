"""Reading and writing the user's data files: the one place every command and the Python API
go through for `.npz` archives, `.npy` arrays and folders of NNEF `.dat` tensor files.

Reading never lets a Python exception escape for a bad file: a missing, empty, truncated or
damaged file, a zip member that is no `.npy` array, or an array that is no real, int or bool
array becomes a `FileDiagnostic` naming the file (and, in an archive, the member). Arrays come
back in refinterp's representation (`refinterp.numeric.representation`: float64, int64, bool).

Writing is checked before any computation (`check_writable`) and is atomic: an `.npz` is written
to a temporary file in the destination folder, then renamed over the destination.

Packs: a pack `xs` of arrays is stored as the keys `xs.0`, `xs.1`, ... (`flatten_packs`), and
read back as a list (`group_packs`). An empty pack has no keys, so it is not stored.

Limits: an array's header is read first, and an array that would take more than
`max_tensor_size` bytes in refinterp's representation is a diagnostic before its data is read
(E1200, docs/limits.md).

Codes: E0800 a file cannot be read or is damaged, E0801 a file cannot be written, E0802 an array
of an unsupported dtype, E0900 array keys that do not form valid packs, E1200 an array above the
tensor size limit.
"""

from __future__ import annotations

import io
import os
import secrets
import zipfile
import zlib
from collections import Counter
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np

from refinterp.numeric.representation import (INT64_MAX, MAX_TENSOR_SIZE, canonical,
                                              check_tensor_size, kind_of)
from refinterp.core.diagnostics import Diagnostic, FileDiagnostic
from refinterp.core.source import SourceFile, Span
from refinterp.numeric.tensorfile import read_tensor, write_tensor

NPY_MAGIC = b"\x93NUMPY"
ZIP_MAGIC = b"PK"
_INT64_MAX = INT64_MAX
_KIND_NAMES = {"U": "text", "S": "bytes", "c": "complex", "V": "structured or raw",
               "M": "datetime", "m": "timedelta", "O": "Python object"}


# ---------------------------------------------------------------------------------------------
# reading


def read_arrays(path: str | Path, what: str, *, keep_dtype: bool = False,
                max_tensor_size: int = MAX_TENSOR_SIZE) -> dict[str, np.ndarray]:
    """The arrays of an `.npz` archive (keyed by member name without `.npy`, in archive order)
    or of a single `.npy` file (keyed by the file's stem). `what` names the file's role in
    messages, e.g. "--inputs". With `keep_dtype` the arrays keep their stored dtype (a back
    end's float32 outputs, for the harness) instead of refinterp's representation. An array
    that would take more than `max_tensor_size` bytes as refinterp holds it is a diagnostic
    (E1200), before its data is read."""
    path = Path(path)
    if _sniff(path, what) == "npy":
        return {path.stem: _read_npy_file(path, what, keep_dtype, max_tensor_size)}
    return _read_npz(path, what, keep_dtype, max_tensor_size)


def read_array(path: str | Path, what: str, *,
               max_tensor_size: int = MAX_TENSOR_SIZE) -> np.ndarray:
    """The array of a single `.npy` file; an `.npz` archive here is a diagnostic."""
    path = Path(path)
    if _sniff(path, what) == "npz":
        raise FileDiagnostic(
            f"cannot read {what} '{path}': it is an .npz archive, not a single .npy array",
            notes=["give an archive of several arrays with the archive form (--inputs, "
                   "--params), or save one array with numpy.save"])
    return _read_npy_file(path, what, False, max_tensor_size)


def read_params(path: str | Path, what: str = "--params", *,
                max_tensor_size: int = MAX_TENSOR_SIZE) -> dict[str, np.ndarray]:
    """Variable values: an `.npz` archive, or a folder of NNEF `.dat` tensor files keyed by
    file name without `.dat` (an empty folder gives no values)."""
    path = Path(path)
    if _is_folder(path):
        return _read_dat_folder(path, what, max_tensor_size)
    if _sniff(path, what) == "npy":
        raise FileDiagnostic(
            f"cannot read {what} '{path}': it is a single .npy array; {what} takes an .npz "
            f"archive or a folder of .dat files")
    return _read_npz(path, what, False, max_tensor_size)


def _is_folder(path: Path) -> bool:
    """Whether `path` is a folder; a path the system refuses (a name too long) is not."""
    try:
        return path.is_dir()
    except OSError:
        return False


MAX_JSON_BYTES = 256 * 2**20  # a manifest or report larger than this is no manifest


def read_json(path: str | Path, what: str) -> Any:
    """The data of a JSON file (a golden manifest, a harness report). A missing, unreadable,
    oversized, non-UTF-8 or invalid file — also one nested too deeply to decode — is a
    FileDiagnostic naming the file (at the line and column of a syntax error)."""
    path = Path(path)
    try:
        if path.stat().st_size > MAX_JSON_BYTES:
            raise _fail(what, path, f"larger than {MAX_JSON_BYTES // 2**20} MiB")
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise _fail(what, path, exc.strerror or _reason(exc)) from None
    except UnicodeDecodeError:
        raise _fail(what, path, "not UTF-8 text") from None
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


def _sniff(path: Path, what: str) -> str:
    """'npz' or 'npy' by the file's first bytes; a missing, unreadable, empty or other file is
    a diagnostic."""
    try:
        with open(path, "rb") as stream:
            start = stream.read(len(NPY_MAGIC))
    except IsADirectoryError:
        raise _fail(what, path, "it is a folder, not a file") from None
    except FileNotFoundError:
        raise _fail(what, path, "no such file") from None
    except OSError as exc:
        raise _fail(what, path, exc.strerror or _reason(exc)) from None
    if not start:
        raise _fail(what, path, "the file is empty")
    if start.startswith(ZIP_MAGIC):
        return "npz"
    if start == NPY_MAGIC:
        return "npy"
    raise _fail(what, path, "not an .npz archive or .npy array (unknown file format)")


def _read_npy_file(path: Path, what: str, keep_dtype: bool, limit: int) -> np.ndarray:
    try:
        with open(path, "rb") as stream:
            size = os.fstat(stream.fileno()).st_size
            return _read_npy(stream, size, what, path, None, keep_dtype, limit)
    except OSError as exc:
        raise _fail(what, path, exc.strerror or _reason(exc)) from None


def _read_npz(path: Path, what: str, keep_dtype: bool, limit: int) -> dict[str, np.ndarray]:
    """The arrays of an `.npz` archive, member by member."""
    try:
        archive = zipfile.ZipFile(path)
    except Exception as exc:  # BadZipFile, OSError, struct or decoding errors of a damaged file
        raise _fail(what, path, f"not a valid .npz archive, damaged or truncated "
                                f"({_reason(exc)})") from None
    with archive:
        members = archive.infolist()
        _check_member_names(members, what, path)
        return {info.filename[:-len(".npy")]: _read_member(archive, info, what, path,
                                                           keep_dtype, limit)
                for info in members}


def _check_member_names(members: list[zipfile.ZipInfo], what: str, path: Path) -> None:
    for info in members:
        if not info.filename.endswith(".npy"):
            raise _fail_array(what, path, info.filename, "is not an .npy array (an .npz "
                                                         "archive holds only .npy members)")
    for name, count in Counter(info.filename for info in members).items():
        if count > 1:
            raise _fail_array(what, path, name, f"appears {count} times")


def _read_member(archive: zipfile.ZipFile, info: zipfile.ZipInfo, what: str,
                 path: Path, keep_dtype: bool, limit: int) -> np.ndarray:
    try:
        stream = _StoredMember.open(path, info) or archive.open(info)
    except Exception as exc:  # encryption, a damaged local header, ...
        raise _damaged(what, path, info.filename, exc) from None
    with stream:
        return _read_npy(stream, info.file_size, what, path, info.filename, keep_dtype, limit)


class _StoredMember(io.RawIOBase):
    """An uncompressed (stored) member of a zip archive read straight from the file: `readinto`
    fills the caller's buffer from the file itself (zipfile's member stream copies every
    chunk through bytes objects: a 466 MB parameter file took 2.4x as long as np.load). The
    CRC-32 is computed on the way and checked when the member has been read to its end, as
    zipfile does."""

    def __init__(self, file: BinaryIO, start: int, size: int, crc: int) -> None:
        super().__init__()
        self.file, self.start, self.size, self.expected = file, start, size, crc
        self.position, self.crc = 0, 0
        file.seek(start)

    @staticmethod
    def open(path: Path, info: zipfile.ZipInfo) -> "_StoredMember | None":
        """The member as a stream, or None when it is not stored, encrypted, or its local
        header is not where the directory says (zipfile's own stream then reports it)."""
        if info.compress_type != zipfile.ZIP_STORED or info.flag_bits & 0x1:
            return None
        file = open(path, "rb")
        file.seek(info.header_offset)
        header = file.read(30)
        if len(header) != 30 or header[:4] != b"PK\x03\x04":
            file.close()
            return None
        skip = int.from_bytes(header[26:28], "little") + int.from_bytes(header[28:30], "little")
        return _StoredMember(file, info.header_offset + 30 + skip, info.file_size, info.CRC)

    def readable(self) -> bool:
        return True

    def tell(self) -> int:
        return self.position

    def readinto(self, buffer: Any) -> int:
        view = memoryview(buffer).cast("B")
        wanted = min(len(view), self.size - self.position)
        got = self.file.readinto(view[:wanted]) if wanted > 0 else 0
        self.crc = zlib.crc32(view[:got], self.crc)
        self.position += got
        if self.position == self.size and self.crc != self.expected:
            raise zipfile.BadZipFile("Bad CRC-32")
        return got

    def read(self, size: int = -1) -> bytes:
        wanted = self.size - self.position if size is None or size < 0 else size
        buffer = bytearray(max(0, min(wanted, self.size - self.position)))
        got = self.readinto(buffer) if buffer else 0
        return bytes(buffer[:got])

    def close(self) -> None:
        self.file.close()
        super().close()


# what reading a file or an archive member may raise: BadZipFile (Bad CRC-32), zlib.error, EOFError
_READ_ERRORS = (zipfile.BadZipFile, zlib.error, EOFError, OSError)


def _damaged(what: str, path: Path, member: str | None, exc: BaseException) -> FileDiagnostic:
    reason = _reason(exc).split(" for file ")[0]   # "Bad CRC-32 for file 'a.npy'"
    return _fail_array(what, path, member, f"is damaged ({reason})")


def _read_npy(stream: BinaryIO, size: int, what: str, path: Path, member: str | None,
              keep_dtype: bool, limit: int) -> np.ndarray:
    """The array of an `.npy` stream of `size` bytes in refinterp's representation: the header
    is read, and the dtype, the length and the tensor size limit checked, before any data is
    read (object arrays are never unpickled)."""
    try:
        version = np.lib.format.read_magic(stream)
        if version == (1, 0):
            shape, fortran, dtype = np.lib.format.read_array_header_1_0(stream)
        else:  # 2.0 and 3.0 share the layout (3.0 only allows utf-8 field names)
            shape, fortran, dtype = np.lib.format.read_array_header_2_0(stream)
    except _READ_ERRORS as exc:  # the file or archive fails, not the header
        raise _damaged(what, path, member, exc) from None
    except Exception as exc:  # ValueError, SyntaxError, tokenize.TokenError, ...
        raise _fail_array(what, path, member, f"is not a valid .npy array: bad header "
                                              f"({_reason(exc)})") from None
    _check_dtype(dtype, what, path, member)
    count = int(np.prod(shape, dtype=object)) if shape else 1
    needed, available = count * dtype.itemsize, size - stream.tell()
    if any(extent < 0 for extent in shape) or needed > available:
        raise _fail_array(what, path, member, f"is truncated or damaged: the header announces "
                                              f"shape {tuple(shape)} of {dtype} ({needed} "
                                              f"bytes) but {available} bytes follow")
    check_tensor_size(kind_of(dtype), shape, limit, f"{what} '{path}'" + (
        f" member '{member}'" if member is not None else ""))
    try:
        flat = np.empty(count, dtype=dtype)
    except Exception as exc:
        raise _fail_array(what, path, member, f"is damaged ({_reason(exc)})") from None
    try:
        _read_into(stream, flat)
    except Exception as exc:  # _READ_ERRORS, encryption, ...
        raise _damaged(what, path, member, exc) from None
    array = flat.reshape(shape, order="F" if fortran else "C")
    if keep_dtype:  # native order (a copy only if the file's order is not)
        return array.astype(array.dtype.newbyteorder("="), copy=False)
    return _to_canonical(array, what, path, member)


_CHUNK = 1 << 20  # bytes read at a time into an array: the source of each copy stays in cache


def _read_into(stream: BinaryIO, flat: np.ndarray) -> None:
    """Fill `flat` (a fresh array) with the next bytes of `stream`, then read the stream to
    its end (a zip member's CRC-32 is checked there). The data is read into the array itself,
    chunk by chunk, rather than into one bytes object that is then copied (parameters of
    hundreds of megabytes: docs/architecture.md, "Whole models")."""
    buffer = memoryview(flat.view(np.uint8)) if flat.size else memoryview(b"")
    filled = 0
    while filled < len(buffer):
        got = stream.readinto(buffer[filled:filled + _CHUNK])
        if not got:
            raise EOFError("the data ends early")
        filled += got
    stream.read()  # to the end: a zip member's CRC-32 is checked there


def _check_dtype(dtype: np.dtype, what: str, path: Path, member: str | None) -> None:
    if dtype.kind not in "fiub" or dtype.hasobject:
        kind = _KIND_NAMES.get(dtype.kind, "unsupported")
        raise _fail_array(what, path, member, f"has dtype {dtype} ({kind}), which is not a "
                                              f"real, int or bool array", code="E0802")


def _to_canonical(array: np.ndarray, what: str, path: Path, member: str | None) -> np.ndarray:
    """float → float64, int/uint → int64 (uint64 values must fit), bool; always writable."""
    if array.dtype.kind == "u" and array.size and int(array.max()) > _INT64_MAX:
        raise _fail_array(what, path, member, f"has {array.dtype} values above the int64 range",
                          code="E0802")
    result = canonical(array)
    return result if result.flags.writeable else result.copy()


def _read_dat_folder(folder: Path, what: str,
                     max_tensor_size: int = MAX_TENSOR_SIZE) -> dict[str, np.ndarray]:
    try:
        files = sorted(p for p in folder.iterdir() if p.name.endswith(".dat"))
    except OSError as exc:
        raise _fail(what, folder, exc.strerror or _reason(exc)) from None
    return {p.name[:-len(".dat")]: _read_dat(p, what, max_tensor_size) for p in files}


def _read_dat(path: Path, what: str, max_tensor_size: int = MAX_TENSOR_SIZE) -> np.ndarray:
    try:
        return read_tensor(path, max_tensor_size)
    except Diagnostic as diag:
        raise FileDiagnostic(f"cannot read {what}: {diag.message}", notes=diag.notes,
                             code=diag.code) from None
    except Exception as exc:  # a header whose numbers no array can have
        raise _fail_array(what, path, None, f"is damaged ({_reason(exc)})") from None


# ---------------------------------------------------------------------------------------------
# writing


def check_writable(path: str | Path, what: str, *, folder_ok: bool = False) -> Path:
    """Check, before any computation, that `path` can be written: its parent folder exists and
    is writable, and it is no folder. With `folder_ok` (`--write-params DIR`) a path not ending
    in `.npz` names a folder, existing or to be created in an existing parent."""
    path = Path(path)
    try:
        return _writable(path, what, folder_ok)
    except OSError as exc:  # a name too long, a loop of symbolic links, ...
        raise _unwritable(what, path, exc.strerror or _reason(exc)) from None


def _writable(path: Path, what: str, folder_ok: bool) -> Path:
    if folder_ok and path.suffix != ".npz":
        if path.is_dir():
            if not os.access(path, os.W_OK | os.X_OK):
                raise _unwritable(what, path, f"folder '{path}' is not writable")
            return path
        if path.exists():
            raise _unwritable(what, path, "it exists and is not a folder")
    elif path.is_dir():
        raise _unwritable(what, path, "it is a folder")
    elif path.exists() and not os.access(path, os.W_OK):
        raise _unwritable(what, path, "the file is not writable")
    _check_parent(path, what)
    return path


def _check_parent(path: Path, what: str) -> None:
    parent = path.parent
    if not parent.exists():
        raise _unwritable(what, path, f"folder '{parent}' does not exist")
    if not parent.is_dir():
        raise _unwritable(what, path, f"'{parent}' is not a folder")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise _unwritable(what, path, f"folder '{parent}' is not writable")


def _unwritable(what: str, path: Path, reason: str) -> FileDiagnostic:
    return FileDiagnostic(f"cannot write {what} '{path}': {reason}", code="E0801")


def write_arrays(path: str | Path, arrays: dict[str, Any], what: str) -> None:
    """Write arrays as an uncompressed `.npz` archive to exactly `path` (no suffix is added),
    atomically; keys keep their order, packs (lists) are flattened to `xs.0`, `xs.1`, ..."""
    path = check_writable(path, what)
    target = path.resolve() if path.is_symlink() else path
    temp = target.parent / f".{target.name}.{secrets.token_hex(4)}.tmp"
    try:
        with open(temp, "xb") as stream:
            _write_npz(stream, flatten_packs(arrays))
            stream.flush()
            os.fsync(stream.fileno())
        os.replace(temp, target)
    except OSError as exc:
        raise _unwritable(what, path, exc.strerror or _reason(exc)) from None
    finally:
        temp.unlink(missing_ok=True)


def _write_npz(stream: Any, arrays: dict[str, np.ndarray]) -> None:
    """What numpy.savez writes (readable by numpy.load), byte for byte reproducible."""
    stream.write(encode_npz(arrays))


# The byte layout of what refinterp writes (docs/golden.md, "Array files"): identical bytes for
# identical arrays, whatever the NumPy version, the clock or the machine.
_NPY_DESCR = {"f": "<f8", "i": "<i8", "b": "|b1"}
_ZIP_TIME = (1980, 1, 1, 0, 0, 0)  # the earliest time a zip entry can hold


def encode_npy(array: Any) -> bytes:
    """An array (real, int or bool; held as float64, int64, bool) as `.npy` format 1.0 bytes:
    the magic, version 1.0, a little-endian uint16 header length, the header
    `{'descr': D, 'fortran_order': False, 'shape': S, }` padded with spaces and ending in a
    newline so that the data starts at a multiple of 64 bytes, then the elements in C order,
    little-endian."""
    array = canonical(np.asarray(array))
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
    `<name>.dat` NNEF tensor files, created if needed."""
    destination = check_writable(destination, what, folder_ok=True)
    if destination.suffix == ".npz":
        write_arrays(destination, arrays, what)
        return
    try:
        destination.mkdir(exist_ok=True)
    except OSError as exc:
        raise _unwritable(what, destination, exc.strerror or _reason(exc)) from None
    for name, value in arrays.items():
        try:
            write_tensor(destination / f"{name}.dat", value)
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
