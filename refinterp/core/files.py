"""Files on disk, safely: the one place refinterp reads a user's file or writes one
(docs/security.md). Every other module reads and writes through these functions.

Reading: only regular files are read. A FIFO, a device, a socket or a folder is refused with a
diagnostic before a byte is read (a FIFO is opened without blocking, so it cannot hang the run),
and every read is capped by a limit counted while reading, never by `st_size` (a device such as
`/dev/zero` says 0).

Writing: a file is written to a temporary file in the same folder, flushed and synced to disk,
then renamed over the target (`os.replace`): a reader, a crash, `kill -9` or a full disk sees the
old content or the new, never a truncated file. An existing target that is no regular file (a
device, FIFO, socket, folder) or a dangling symbolic link is refused; a link to a regular file is
written through (the file it names is replaced). A folder is replaced by building the new one
beside it, renaming the old one aside, renaming the new one in and only then removing the old
(`replace_folder`); the folders refinterp builds so carry a marker file, and refinterp deletes a
folder only when it holds that marker (`remove_made_folder`, the marker last), never because a
name resolved to it. What an interrupted replacement leaves is tidied by `recover_folders`.

Names built from data (case ids, operator names, manifest entries) become path components only
through `safe_component`, and paths built from them are proven inside their root (`inside`)
before anything is written or deleted.

Codes: E0800 a file cannot be read, E0801 a file cannot be written, E0803 a source file is
no SkriptND text (an ONNX model, an array file, UTF-16, binary)."""

from __future__ import annotations

import os
import secrets
import shutil
import stat
from collections.abc import Iterator
from pathlib import Path

from refinterp.core.diagnostics import FileDiagnostic
from refinterp.core.source import SourceFile, Span

# The file that marks a folder refinterp made (a case folder being built, an old one set aside).
MADE_MARKER = ".refinterp-made"
# Temporary names: `.<name>.<kind>.<hex>` beside the target; never a valid component themselves.
_TEMP_KINDS = ("tmp", "new", "old")


# ---------------------------------------------------------------------------------------------
# names and places


def safe_component(name: str, what: str) -> str:
    """`name` if it can be one path component: not empty, not `.` or `..`, not starting with a
    dot (refinterp's own temporary names do), no separator, no NUL; else a FileDiagnostic
    (E0801) naming `what` (e.g. "case id")."""
    if not isinstance(name, str) or not name or name in (".", "..") or name.startswith(".") \
            or "/" in name or "\\" in name or "\0" in name:
        raise FileDiagnostic(f"{what} {name!r} cannot name a file or folder: a name must not be "
                             f"empty, '.' or '..', start with a dot, or hold '/', '\\' or NUL",
                             code="E0801")
    return name


def inside(root: str | Path, path: str | Path, what: str) -> Path:
    """`path`, once proven to lie inside `root` after resolving every `..` and symbolic link
    (of the parts that exist); else a FileDiagnostic (E0801)."""
    root_resolved = Path(root).resolve()
    resolved = Path(path).resolve()
    if resolved != root_resolved and root_resolved not in resolved.parents:
        raise FileDiagnostic(f"{what} '{path}' lies outside '{root}'; refinterp writes and "
                             f"deletes only inside it", code="E0801")
    return Path(path)


# ---------------------------------------------------------------------------------------------
# reading


def _kind_of(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def _cannot_read(what: str, path: Path, reason: str) -> FileDiagnostic:
    return FileDiagnostic(f"cannot read {what} '{path}': {reason}", code="E0800")


def open_regular(path: str | Path, what: str):
    """`path` opened for binary reading, once it is proven to be a regular file (following
    symbolic links): a FIFO is opened without blocking and refused, as are devices, sockets and
    folders. Raises a FileDiagnostic (E0800) for anything that cannot be read."""
    path = Path(path)
    try:
        descriptor = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) |
                             getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise _cannot_read(what, path, "no such file") from None
    except IsADirectoryError:
        raise _cannot_read(what, path, "it is a folder, not a file") from None
    except (OSError, ValueError) as exc:  # ValueError: a NUL in the name
        raise _cannot_read(what, path, getattr(exc, "strerror", None) or str(exc)) from None
    try:
        mode = os.fstat(descriptor).st_mode
        if not stat.S_ISREG(mode):
            raise _cannot_read(what, path, f"it is {_kind_of(mode)}; only regular files are "
                                           f"read")
        if hasattr(os, "set_blocking"):
            os.set_blocking(descriptor, True)
        return os.fdopen(descriptor, "rb")
    except BaseException:
        os.close(descriptor)
        raise


def read_bytes(path: str | Path, what: str, limit: int) -> bytes:
    """The bytes of the regular file `path`, at most `limit` of them: a longer file is a
    FileDiagnostic (E0800) as soon as the read passes the limit, whatever its size says."""
    path = Path(path)
    with open_regular(path, what) as stream:
        try:
            data = stream.read(limit + 1)
        except OSError as exc:
            raise _cannot_read(what, path, exc.strerror or str(exc)) from None
    if len(data) > limit:
        raise _cannot_read(what, path, f"larger than {_size(limit)} (the limit for {what})")
    return data


def read_text(path: str | Path, what: str, limit: int) -> str:
    """The UTF-8 text of the regular file `path` (as `read_bytes`); text that is no UTF-8 is a
    FileDiagnostic (E0800)."""
    data = read_bytes(path, what, limit)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _cannot_read(what, Path(path), f"not UTF-8 text (byte {exc.start})") from None


def read_chunks(path: str | Path, what: str, limit: int,
                chunk: int = 1 << 20) -> Iterator[bytes]:
    """The bytes of the regular file `path` in pieces of at most `chunk` bytes (to hash or
    copy a large file in little memory), at most `limit` bytes in all: a longer file is a
    FileDiagnostic (E0800) as soon as the read passes the limit, whatever its size says."""
    path = Path(path)
    with open_regular(path, what) as stream:
        total = 0
        while True:
            try:
                data = stream.read(min(chunk, limit + 1 - total))
            except OSError as exc:
                raise _cannot_read(what, path, exc.strerror or str(exc)) from None
            if not data:
                return
            total += len(data)
            if total > limit:
                raise _cannot_read(what, path, f"larger than {_size(limit)} (the limit for "
                                               f"{what})")
            yield data


MAX_SOURCE_BYTES = 64 * 2**20  # the largest SkriptND source file read


def read_source(path: str | Path, what: str = "source file") -> SourceFile:
    """A SkriptND source file read as UTF-8, without a leading byte-order mark (undecodable
    bytes are replaced, never fatal): only a regular file of at most `MAX_SOURCE_BYTES`
    (`read_bytes`: a FIFO, a device or a longer file is a FileDiagnostic, E0800, `what` naming
    the file's role)."""
    data = read_bytes(path, what, MAX_SOURCE_BYTES)
    _check_text(path, data)
    return SourceFile(str(path), data.decode("utf-8-sig", errors="replace"))


CONVERTING = "docs/api.md, \"Files that are not SkriptND text\""

# (magic bytes at the start, what the file is, what to do instead) of the files most often
# given where SkriptND text belongs
_NOT_TEXT = (
    (b"\x93NUMPY", "a NumPy .npy array", "give arrays with --input NAME=FILE.npy"),
    (b"PK\x03\x04", "a zip archive (a NumPy .npz file is one)",
     "give arrays with --inputs FILE.npz or --params FILE.npz"),
    (b"PK\x05\x06", "a zip archive (a NumPy .npz file is one)",
     "give arrays with --inputs FILE.npz or --params FILE.npz"),
    (b"\x4e\xef", "an NNEF tensor file (.dat)",
     "a model folder's variables are read from its .dat files: give the folder"),
    (b"\x1f\x8b", "a gzip-compressed file", "decompress it first"),
    (b"\x00\x00\xfe\xff", "UTF-32 text", "SkriptND source is UTF-8: convert it (iconv -f "
                                          "UTF-32 -t UTF-8)"),
    (b"\xff\xfe\x00\x00", "UTF-32 text", "SkriptND source is UTF-8: convert it (iconv -f "
                                          "UTF-32 -t UTF-8)"),
    (b"\xff\xfe", "UTF-16 text", "SkriptND source is UTF-8: convert it (iconv -f UTF-16 -t "
                                "UTF-8)"),
    (b"\xfe\xff", "UTF-16 text", "SkriptND source is UTF-8: convert it (iconv -f UTF-16 -t "
                                "UTF-8)"),
)
# the first byte of each field of an ONNX ModelProto that may follow ir_version (field 1, a
# varint: 0x08): producer_name, producer_version, domain, model_version, doc_string, graph,
# opset_import
_ONNX_NEXT_FIELDS = b"\x12\x1a\x22\x28\x32\x3a\x42"


def _check_text(path: str | Path, data: bytes) -> None:
    """Refuse a file that is no SkriptND text (E0803, at line 1 column 1, or at the first NUL
    byte of a text file), naming what it is when its first bytes say it: an ONNX model, a
    NumPy array, a zip archive (.npz), an NNEF tensor file, gzip, UTF-16 or UTF-32 text, a
    file of control bytes with a NUL (binary); or a text file holding a NUL byte."""
    what = _binary_kind(path, data)
    if what is not None:
        kind, advice = what
        # the excerpt shows the first bytes, escaped, the first one underlined
        source = SourceFile(str(path), _escaped(data[:16]))
        raise FileDiagnostic(f"this is {kind}, not SkriptND text",
                             Span(source, 1, 1, 1, 1 + len(_escaped(data[:1]))),
                             notes=[advice], code="E0803")
    nul = data.find(b"\0")
    if nul >= 0:
        source = SourceFile(str(path), data.decode("utf-8-sig", errors="replace"))
        at = source.text.find("\0")
        raise FileDiagnostic("this file holds a NUL byte: it is not SkriptND text",
                             source.span(at, at + 1), notes=["SkriptND source is UTF-8 text"],
                             code="E0803")


def _escaped(data: bytes) -> str:
    """Bytes as printable text: ASCII letters, digits and punctuation as they are, every
    other byte as \\xHH."""
    return "".join(chr(b) if 0x20 < b < 0x7f and b != 0x5c else f"\\x{b:02x}" for b in data)


def _binary_kind(path: str | Path, data: bytes) -> tuple[str, str] | None:
    """(what the file is, what to do instead) for a file whose first bytes name a format that
    is no SkriptND text; None otherwise."""
    if _is_onnx(path, data):
        return ("an ONNX model (protobuf)", "convert it to SkriptND with the Khronos NNEF-Tools "
                                            f"converter ({CONVERTING})")
    for magic, kind, advice in _NOT_TEXT:
        if data.startswith(magic):
            return kind, advice
    head = data[:64]
    if len(head) >= 4 and head[1::2].count(0) == len(head) // 2 and 0 not in head[0::2]:
        return "UTF-16 text", "SkriptND source is UTF-8: convert it (iconv -f UTF-16LE -t UTF-8)"
    if len(head) >= 4 and head[0::2].count(0) == len(head) // 2 and 0 not in head[1::2]:
        return "UTF-16 text", "SkriptND source is UTF-8: convert it (iconv -f UTF-16BE -t UTF-8)"
    head = data[:512]
    if 0 in head and sum(b < 0x20 and b not in b"\t\n\r\f" for b in head) * 10 > len(head):
        return "a binary file", "SkriptND source is UTF-8 text"  # mostly control bytes
    return None


def _is_onnx(path: str | Path, data: bytes) -> bool:
    """An ONNX model: a protobuf ModelProto, which starts with its ir_version (field 1, a
    varint) and then another of its fields; or a binary file named *.onnx."""
    if Path(path).suffix.lower() == ".onnx" and (b"\0" in data or data[:1] == b"\x08"):
        return True
    if data[:1] != b"\x08":
        return False
    end = 1
    while end < min(len(data), 11) and data[end] & 0x80:  # the varint's continuation bytes
        end += 1
    return end + 1 < len(data) and data[end + 1] in _ONNX_NEXT_FIELDS


def _size(count: int) -> str:
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if count >= scale and count % scale == 0:
            return f"{count // scale} {unit}"
    return f"{count} bytes"


# ---------------------------------------------------------------------------------------------
# writing files


def _cannot_write(what: str, path: Path, reason: str) -> FileDiagnostic:
    return FileDiagnostic(f"cannot write {what} '{path}': {reason}", code="E0801")


def output_target(path: str | Path, what: str) -> Path:
    """The file that writing `path` replaces, checked before anything is computed: its folder
    exists and is writable; an existing `path` is a regular file or a symbolic link to one (the
    file it names is the target); a folder, device, FIFO, socket or dangling link is refused
    (FileDiagnostic E0801)."""
    path = Path(path)
    try:
        return _output_target(path, what)
    except OSError as exc:  # a name too long, a loop of symbolic links, ...
        raise _cannot_write(what, path, exc.strerror or str(exc)) from None
    except ValueError as exc:  # a NUL in the name
        raise _cannot_write(what, path, str(exc)) from None


def _output_target(path: Path, what: str) -> Path:
    if str(path) == "":
        raise _cannot_write(what, path, "the name is empty")
    target = path
    try:
        info = os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):  # the parent checks below say which
        info = None
    if info is not None and stat.S_ISLNK(info.st_mode):
        try:
            info = os.stat(path)
        except FileNotFoundError:
            raise _cannot_write(what, path, "it is a symbolic link to nothing (refusing to "
                                            "create the file it names)") from None
        target = path.resolve()
    if info is not None and not stat.S_ISREG(info.st_mode):
        raise _cannot_write(what, path, f"it is {_kind_of(info.st_mode)}; only a regular file "
                                        f"is replaced")
    if info is not None and not os.access(target, os.W_OK):
        raise _cannot_write(what, path, "the file is not writable")
    parent = target.parent
    if not parent.exists():
        raise _cannot_write(what, path, f"folder '{parent}' does not exist")
    if not parent.is_dir():
        raise _cannot_write(what, path, f"'{parent}' is not a folder")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise _cannot_write(what, path, f"folder '{parent}' is not writable")
    return target


def temporary_name(target: Path, kind: str) -> Path:
    """A fresh hidden name beside `target` for a temporary file or folder of `kind` ("tmp",
    "new" or "old")."""
    assert kind in _TEMP_KINDS
    return target.parent / f".{target.name}.{kind}.{secrets.token_hex(4)}"


def write_bytes(path: str | Path, data: bytes, what: str) -> Path:
    """Write `data` to `path` atomically (see the module docstring): the old content, if any,
    stays whole until the new one is complete on disk; a failure leaves no temporary file and
    is a FileDiagnostic (E0801). An existing file keeps its permission bits. Returns the file
    written (the target of a symbolic link)."""
    path = Path(path)
    target = output_target(path, what)
    temporary = temporary_name(target, "tmp")
    try:
        mode = stat.S_IMODE(os.stat(target).st_mode) if target.exists() else None
        descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL |
                             getattr(os, "O_CLOEXEC", 0), 0o666 if mode is None else 0o600)
        try:
            _write_all(descriptor, data)
            os.fsync(descriptor)
        finally:
            os.close(descriptor)
        if mode is not None:
            os.chmod(temporary, mode)
        os.replace(temporary, target)
        _sync_folder(target.parent)
    except OSError as exc:
        raise _cannot_write(what, path, exc.strerror or str(exc)) from None
    finally:
        _unlink_quietly(temporary)
    return target


def _write_all(descriptor: int, data: bytes) -> None:
    """Every byte of `data` to the open file `descriptor` (`os.write` may write fewer)."""
    view = memoryview(data)
    while view:
        view = view[os.write(descriptor, view):]


def write_text(path: str | Path, text: str, what: str) -> Path:
    """`write_bytes` of `text` as UTF-8 (newlines as given)."""
    return write_bytes(path, text.encode("utf-8", errors="surrogateescape"), what)


def _sync_folder(folder: Path) -> None:
    """Make a rename in `folder` durable (best effort: not every system can sync a folder)."""
    try:
        descriptor = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(descriptor)
    except OSError:
        pass
    finally:
        os.close(descriptor)


def _unlink_quietly(path: Path) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
    except OSError:
        pass


# ---------------------------------------------------------------------------------------------
# writing folders


def make_folder(target: str | Path, what: str) -> Path:
    """A new, empty temporary folder beside `target` (which need not exist), marked as made by
    refinterp, to be filled and then put in place by `replace_folder`."""
    target = Path(target)
    folder = temporary_name(target, "new")
    try:
        folder.mkdir()
        _mark(folder)
    except OSError as exc:
        shutil.rmtree(folder, ignore_errors=True)
        raise _cannot_write(what, target, exc.strerror or str(exc)) from None
    return folder


def _mark(folder: Path) -> None:
    """Put refinterp's marker file in `folder` (it may then be deleted by refinterp)."""
    os.close(os.open(folder / MADE_MARKER, os.O_WRONLY | os.O_CREAT | getattr(os, "O_CLOEXEC", 0),
                     0o644))


def output_folder(path: str | Path, what: str) -> Path:
    """The folder `path`, created (with its parents) if missing, for a command to write into;
    an existing non-folder, or a folder that cannot be made, is a FileDiagnostic (E0801)."""
    path = Path(path)
    try:
        if os.path.lexists(path) and not path.is_dir():
            raise _cannot_write(what, path, "it exists and is not a folder")
        path.mkdir(parents=True, exist_ok=True)
        if not os.access(path, os.W_OK | os.X_OK):
            raise _cannot_write(what, path, "the folder is not writable")
    except OSError as exc:
        raise _cannot_write(what, path, exc.strerror or str(exc)) from None
    except ValueError as exc:  # a NUL in the name
        raise _cannot_write(what, path, str(exc)) from None
    return path


def replace_folder(new: Path, target: str | Path, what: str) -> None:
    """Put the folder `new` (from `make_folder`, complete) in place of `target`: the old
    `target`, if any, is renamed aside first, the new one renamed in, then the old one removed —
    at every moment `target` is either the old folder whole, the new one whole, or (for an
    instant) absent with the old one whole beside it, which `recover_folders` puts back. The
    marker is removed from the folder put in place."""
    target = Path(target)
    old = None
    try:
        if os.path.lexists(target):
            if target.is_symlink() or not target.is_dir():
                raise _cannot_write(what, target, "it exists and is not a folder")
            _mark(target)  # the old folder, once set aside, is ours to delete
            aside = temporary_name(target, "old")
            os.rename(target, aside)
            old = aside
        os.rename(new, target)
    except OSError as exc:
        if old is None:  # the old folder never moved: it stays as it was
            _unlink_quietly(target / MADE_MARKER)
        elif not os.path.lexists(target):
            try:
                os.rename(old, target)
                _unlink_quietly(target / MADE_MARKER)
                old = None
            except OSError:
                pass  # left aside, marked: `recover_folders` puts it back
        raise _cannot_write(what, target, exc.strerror or str(exc)) from None
    _unlink_quietly(target / MADE_MARKER)
    _sync_folder(target.parent)
    if old is not None:
        remove_made_folder(old)


def remove_made_folder(folder: str | Path) -> bool:
    """Delete `folder` if, and only if, refinterp made it (it holds the marker and is no
    symbolic link); whether it was deleted."""
    folder = Path(folder)
    if folder.is_symlink() or not folder.is_dir() or not (folder / MADE_MARKER).is_file():
        return False
    # the marker goes last: a removal cut short leaves a folder still marked as refinterp's
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return False
    for entry in entries:
        if entry.name == MADE_MARKER:
            continue
        if entry.is_dir(follow_symlinks=False):
            shutil.rmtree(entry.path, ignore_errors=True)
        else:
            _unlink_quietly(Path(entry.path))
    _unlink_quietly(folder / MADE_MARKER)
    _remove_empty(folder)
    return not os.path.lexists(folder)


def _empty_folder(path: Path) -> bool:
    try:
        return path.is_dir() and not path.is_symlink() and not os.listdir(path)
    except OSError:
        return False


def _remove_empty(folder: Path) -> None:
    try:
        os.rmdir(folder)
    except OSError:  # not empty (not ours to empty), or gone
        pass


def is_temporary(name: str) -> bool:
    """Whether `name` is a temporary name of `temporary_name` (or any hidden name): such an
    entry is never a case, a module or an output."""
    return name.startswith(".")


def _is_hex(text: str) -> bool:
    return len(text) == 8 and all(c in "0123456789abcdef" for c in text)


def recover_folders(parent: str | Path) -> list[str]:
    """Tidy what an interrupted `replace_folder` or build left in `parent`: a set-aside old
    folder whose target is missing is put back; other temporary folders and files refinterp
    made (marked, or empty) are removed, and a marker left in a folder in place is dropped
    (so that the folder is never taken for one refinterp may delete). Returns the names of
    the targets put back."""
    parent = Path(parent)
    restored: list[str] = []
    try:
        entries = sorted(os.listdir(parent))
    except OSError:
        return restored
    for name in entries:
        if not is_temporary(name):
            if not (parent / name).is_symlink() and (parent / name / MADE_MARKER).is_file():
                _unlink_quietly(parent / name / MADE_MARKER)
            continue
        parts = name[1:].rsplit(".", 2)
        if len(parts) != 3 or parts[1] not in _TEMP_KINDS or not _is_hex(parts[2]):
            continue
        entry, target = parent / name, parent / parts[0]
        if _empty_folder(entry):
            _remove_empty(entry)  # made, or emptied, by a run cut short before its marker
        elif parts[1] == "tmp":
            if entry.is_file() and not entry.is_symlink():
                _unlink_quietly(entry)
        elif parts[1] == "old" and not os.path.lexists(target) and \
                (entry / MADE_MARKER).is_file():
            try:
                os.rename(entry, target)
                _unlink_quietly(target / MADE_MARKER)
                restored.append(parts[0])
            except OSError:
                pass
        else:
            remove_made_folder(entry)
    return restored

