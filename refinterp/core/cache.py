"""Bounded caches: what refinterp keeps between calls (parsed files, loaded programs, facts
derived from a syntax tree) is kept for the most recently used keys only, never growing without
bound. A `BoundedCache` is keyed by value; an `IdentityCache` by the very object, which each of
its entries holds (so no other object can take its `id()` while the entry lives).

A `DiskCache` keeps bytes between processes (the parsed standard library in its serial form,
so that a cold `refinterp eval` does not parse math.sknd again): versioned, checksummed, kept
only in a folder of the current user that no one else can write (docs/security.md), and never
more than an optimisation — any failure to read or write an entry is silent, and the caller then
computes the value as if there were no cache. It stores bytes only: what they mean, and how
they are checked, is the caller's (language.modules, with syntax.serial)."""

from __future__ import annotations

import hashlib
import os
import stat
import tempfile
from collections import OrderedDict
from pathlib import Path
from typing import Generic, Hashable, Sequence, TypeVar

V = TypeVar("V")


class BoundedCache(Generic[V]):
    """A mapping of at most `size` entries; the least recently used goes first."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._entries: OrderedDict[Hashable, V] = OrderedDict()

    def get(self, key: Hashable) -> V | None:
        value = self._entries.get(key)
        if value is not None:
            self._entries.move_to_end(key)
        return value

    def put(self, key: Hashable, value: V) -> None:
        self._entries[key] = value
        self._entries.move_to_end(key)
        while len(self._entries) > self.size:
            self._entries.popitem(last=False)

    def clear(self) -> None:
        self._entries.clear()

    def __len__(self) -> int:
        return len(self._entries)


class IdentityCache(Generic[V]):
    """A mapping from objects, by identity, to values: at most `size` entries, the least
    recently used going first. For facts derived from a syntax tree: a key by value would be
    hashed and compared by walking the whole tree at every look-up, recursively, so a deep tree
    (a long flat chain such as `1 + 1 + ... + 1`) would overflow the stack."""

    def __init__(self, size: int) -> None:
        self._entries: BoundedCache[tuple[object, V]] = BoundedCache(size)

    def get(self, key: object) -> V | None:
        # by id(): each entry holds its key, so no other object has that id while it lives
        entry = self._entries.get(id(key))
        return entry[1] if entry is not None and entry[0] is key else None

    def put(self, key: object, value: V) -> None:
        self._entries.put(id(key), (key, value))

    def clear(self) -> None:
        self._entries.clear()

    def __len__(self) -> int:
        return len(self._entries)


# Environment variables of the disk cache (docs/performance.md "Start-up").
CACHE_DIR_VARIABLE = "REFINTERP_CACHE_DIR"   # where the cache lives (default: user cache dir)
NO_CACHE_VARIABLE = "REFINTERP_NO_CACHE"     # set (to anything but '' or '0'): no disk cache

MAX_ENTRY_BYTES = 64 * 2**20  # a longer entry file is not read (whatever its size says)
_MAX_PARTS = 100_000          # an entry's header announces at most this many parts
_MAGIC = b"refinterp-cache 3\n"
_SUFFIX = ".entry"


def cache_root() -> Path | None:
    """The folder of refinterp's disk caches, or None when disk caching is switched off:
    $REFINTERP_CACHE_DIR, else $XDG_CACHE_HOME/refinterp, else ~/.cache/refinterp."""
    if os.environ.get(NO_CACHE_VARIABLE, "") not in ("", "0"):
        return None
    explicit = os.environ.get(CACHE_DIR_VARIABLE)
    if explicit:
        return Path(explicit)
    xdg = os.environ.get("XDG_CACHE_HOME")
    try:
        base = Path(xdg) if xdg and os.path.isabs(xdg) else Path.home() / ".cache"
    except RuntimeError:  # no home directory
        return None
    return base / "refinterp"


def private_folder(path: Path) -> bool:
    """Whether `path` is a folder (a link to one counts) of the current user that neither its
    group nor others may write: the only kind of folder a disk cache reads or writes."""
    getuid = getattr(os, "getuid", None)
    try:
        info = os.stat(path)
    except (OSError, ValueError):
        return False
    return getuid is not None and stat.S_ISDIR(info.st_mode) and \
        info.st_uid == getuid() and not info.st_mode & 0o022


class DamagedEntry(ValueError):
    """A part of an entry whose checksum does not match its bytes."""


class Part:
    """One part of an entry (`DiskCache.store`'s `parts`): its bytes, checked against their
    checksum only when read (`read`), so that a reader pays for the parts it uses only."""

    __slots__ = ("_data", "_start", "_end", "_digest")

    def __init__(self, data: bytes, start: int, end: int, digest: bytes) -> None:
        self._data, self._start, self._end, self._digest = data, start, end, digest

    def read(self) -> bytes:
        """The part's bytes; DamagedEntry if they do not match their checksum."""
        view = memoryview(self._data)[self._start:self._end]
        if _hex_digest(view) != self._digest:
            raise DamagedEntry("a part of a cache entry does not match its checksum")
        return bytes(view)


class Entry:
    """An entry read back: its payload (checksum verified) and its parts (checked when
    read)."""

    __slots__ = ("payload", "parts")

    def __init__(self, payload: bytes, parts: tuple[Part, ...]) -> None:
        self.payload, self.parts = payload, parts


class DiskCache:
    """Bytes kept in files between processes, keyed by the text they were computed from.

    An entry of `kind` lives in `<root>/<kind>-<version>/<sha256 of the text>.entry`, where
    `version` starts `fingerprint`, a hash of everything that decides the stored form (the
    caller passes the code that computes and defines the values): an entry is never read by
    another version. The file is a header, then a payload, then any number of parts:

        refinterp-cache 3           (the format)
        <fingerprint>               (the full fingerprint, checked)
        <sha256 of the text>        (the key, checked)
        <n>                         (the number of parts)
        <sha256> <length>           (the payload's checksum and length in bytes)
        <sha256> <length>           (n lines: each part's)
        payload and parts, back to back: exactly the lengths announced

    A root or kind folder that is not `private_folder` (not the user's own, or writable by
    group or others) is neither read nor written, silently; folders are made 0o700, entries
    0o600. Only a regular file of the user's of at most MAX_ENTRY_BYTES is read (a FIFO cannot
    hang a reader, a huge file cannot fill its memory). Entries are written to a temporary
    file renamed into place (readers never see half an entry); a read-only cache is only
    read. Reading or writing never raises: a missing, damaged, foreign or unreadable entry
    reads as None, and storing replaces it."""

    def __init__(self, kind: str, fingerprint: str, root: Path | None = None) -> None:
        self.kind = kind
        self.fingerprint = fingerprint
        self.root = root

    @property
    def enabled(self) -> bool:
        """Whether entries may be read or written at all (not switched off)."""
        return self._folders() is not None

    def _folders(self) -> tuple[Path, Path] | None:
        root = self.root if self.root is not None else cache_root()
        return None if root is None else (root, root / f"{self.kind}-{self.fingerprint[:20]}")

    def _header(self, digest: str) -> bytes:
        return _MAGIC + f"{self.fingerprint}\n{digest}\n".encode("ascii")

    def prepare(self) -> bool:
        """Make the folders if missing; whether `store` can write there (they are the user's
        own): a caller may skip making what would not be kept."""
        return self._writable_folder() is not None

    def _writable_folder(self) -> Path | None:
        """The kind folder, made (0o700, with the root) if missing, if it and the root are
        `private_folder`s; else None."""
        folders = self._folders()
        if folders is None:
            return None
        try:
            for folder in folders:
                folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        except (OSError, ValueError):
            return None
        return folders[1] if all(map(private_folder, folders)) else None

    def load(self, text: str) -> Entry | None:
        """The entry stored for `text`, or None."""
        folders = self._folders()
        if folders is None or not all(map(private_folder, folders)):
            return None
        digest = _digest(text)
        data = _read_entry(folders[1] / f"{digest}{_SUFFIX}")
        if data is None:
            return None
        try:
            return _parse_entry(data, self._header(digest))
        except (ValueError, IndexError):  # a header or checksum that does not hold
            return None

    def store(self, text: str, payload: bytes, parts: Sequence[bytes] = ()) -> None:
        """Keep `payload` and `parts` for `text`, if possible (see the class)."""
        folder = self._writable_folder()
        if folder is None:
            return
        digest = _digest(text)
        lines = [self._header(digest), b"%d\n" % len(parts)]
        lines.extend(b"%s %d\n" % (_hex_digest(p), len(p)) for p in (payload, *parts))
        temporary = None
        try:
            handle, temporary = tempfile.mkstemp(dir=folder, prefix=".", suffix=".tmp")
            with os.fdopen(handle, "wb") as out:  # mkstemp makes it 0o600
                out.write(b"".join([*lines, payload, *parts]))
            os.replace(temporary, folder / f"{digest}{_SUFFIX}")
            temporary = None
        except (OSError, ValueError):  # a cache that cannot be written is only slower
            pass
        finally:
            if temporary is not None:
                try:
                    os.unlink(temporary)
                except OSError:
                    pass


def _read_entry(path: Path) -> bytes | None:
    """The bytes of the entry file `path` if it is a regular file (not a link) of the current
    user of at most MAX_ENTRY_BYTES, read without blocking on a FIFO; else None."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOFOLLOW", 0) | \
        getattr(os, "O_CLOEXEC", 0)
    try:
        descriptor = os.open(path, flags)
    except (OSError, ValueError):
        return None
    try:
        info = os.fstat(descriptor)
        if not stat.S_ISREG(info.st_mode) or info.st_uid != os.getuid():
            return None
        chunks, size = [], 0
        want = min(info.st_size, MAX_ENTRY_BYTES) + 1  # + 1: a file larger than it says
        while size <= MAX_ENTRY_BYTES:
            chunk = os.read(descriptor, want)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
            want = min(2**20, MAX_ENTRY_BYTES + 1 - size)
        return b"".join(chunks) if size <= MAX_ENTRY_BYTES else None
    except OSError:
        return None
    finally:
        os.close(descriptor)


def _parse_entry(data: bytes, header: bytes) -> Entry:
    """The entry of `data`, whose header must start with `header` (format, fingerprint, key);
    a ValueError (or IndexError) if it is damaged, truncated or foreign."""
    if not data.startswith(header):
        raise ValueError("a foreign entry")
    position = len(header)
    end = data.index(b"\n", position)
    count = _number(data[position:end])
    if count > _MAX_PARTS:
        raise ValueError("too many parts")
    sizes = []
    for _ in range(count + 1):
        position, end = end + 1, data.index(b"\n", end + 1)
        digest, space, length = data[position:end].partition(b" ")
        if len(digest) != 64 or not space:
            raise ValueError("a damaged header")
        sizes.append((digest, _number(length)))
    start = end + 1
    if start + sum(size for _, size in sizes) != len(data):
        raise ValueError("a truncated entry")
    parts = []
    for digest, size in sizes:
        parts.append(Part(data, start, start + size, digest))
        start += size
    payload = parts[0].read()  # its checksum verified now: DamagedEntry is a ValueError
    return Entry(payload, tuple(parts[1:]))


def _number(text: bytes) -> int:
    """A length or count in decimal digits (no sign, no spaces, at most 12 digits)."""
    if not text.isdigit() or len(text) > 12:
        raise ValueError(f"not a length: {text[:20]!r}")
    return int(text)


def _hex_digest(data: bytes | memoryview) -> bytes:
    return hashlib.sha256(data).hexdigest().encode("ascii")


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", errors="surrogatepass")).hexdigest()
