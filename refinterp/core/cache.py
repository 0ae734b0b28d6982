"""Bounded caches: what refinterp keeps between calls (parsed files, loaded programs, facts
derived from a syntax tree) is kept for the most recently used keys only, never growing without
bound. A `BoundedCache` is keyed by value; an `IdentityCache` by the very object, which each of
its entries holds (so no other object can take its `id()` while the entry lives).

A `DiskCache` keeps values between processes (the parsed standard library, so that a cold
`refinterp eval` does not parse math.sknd again): versioned, checked on every read, and never
more than an optimisation — any failure to read or write an entry is silent, and the caller then
computes the value as if there were no cache."""

from __future__ import annotations

import gc
import hashlib
import io
import os
import pickle
import sys
import tempfile
import threading
from collections import OrderedDict
from pathlib import Path
from typing import Generic, Hashable, Mapping, TypeVar

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
        entry = self._entries.get(id(key))
        return entry[1] if entry is not None and entry[0] is key else None

    def put(self, key: object, value: V) -> None:
        self._entries.put(id(key), (key, value))

    def clear(self) -> None:
        self._entries.clear()

    def __len__(self) -> int:
        return len(self._entries)


# Environment variables of the disk cache (docs/architecture.md "Start-up").
CACHE_DIR_VARIABLE = "REFINTERP_CACHE_DIR"   # where the cache lives (default: user cache dir)
NO_CACHE_VARIABLE = "REFINTERP_NO_CACHE"     # set (to anything but '' or '0'): no disk cache

# A pickle is written only while the recursion limit is at most this: the C pickler recurses
# once per nesting level, and this bound keeps it far from the end of the C stack (a deeper
# tree raises RecursionError, which only means the entry is not written).
_MAX_PICKLE_RECURSION = 4000
_MAGIC = b"refinterp-cache\n"


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


class Deferred:
    """A part of a value a `DiskCache` stores as a pickle of its own, inside the entry, and
    reads only when first asked for (`get`): a reader that needs one definition of a library
    module unpickles that one only (language.modules). `Deferred(value)` marks what to store
    so; reading the entry gives a `Deferred` whose `get` unpickles it — under the same checks
    as the entry (its classes of the allowed modules only, the shared objects by reference) —
    once, whichever thread asks first; a part that cannot be read raises there, so the caller
    decides what to do instead (modules.py parses the module again)."""

    __slots__ = ("_value", "_data", "_shared", "_modules")

    def __init__(self, value: object) -> None:
        self._value = value
        self._data: bytes | None = None

    @classmethod
    def _stored(cls, data: bytes, shared: Mapping[str, object],
                modules: frozenset[str]) -> "Deferred":
        deferred = cls(None)
        deferred._data, deferred._shared, deferred._modules = data, shared, modules
        return deferred

    def get(self) -> object:
        """The value (unpickled on the first call)."""
        if self._data is not None:
            with _READING:
                if self._data is not None:
                    self._value = _unpickle(self._data, self._shared, self._modules)
                    self._data = self._shared = self._modules = None
        return self._value


_READING = threading.RLock()  # one Deferred read at a time: each is read exactly once


class _Pickler(pickle.Pickler):
    """Writes the objects of `shared` as references by name rather than by value, and each
    `Deferred` as a pickle of its own (bytes inside this one)."""

    def __init__(self, stream: io.BytesIO, shared: Mapping[str, object]) -> None:
        super().__init__(stream, protocol=pickle.HIGHEST_PROTOCOL)
        self._shared = shared
        self._names = {id(value): name for name, value in shared.items()}

    def persistent_id(self, obj: object) -> object:  # noqa: D102 - pickle's hook
        if type(obj) is Deferred:
            part = io.BytesIO()
            _Pickler(part, self._shared).dump(obj.get())
            return ("deferred", part.getvalue())
        return self._names.get(id(obj))


class _Unpickler(pickle.Unpickler):
    """Reads what `_Pickler` wrote: references by name become the caller's objects, and only
    classes of the allowed modules are looked up (an entry can name nothing else)."""

    def __init__(self, stream: io.BytesIO, shared: Mapping[str, object],
                 modules: frozenset[str]) -> None:
        super().__init__(stream)
        self._shared = shared
        self._modules = modules

    def persistent_load(self, pid: object) -> object:  # noqa: D102 - pickle's hook
        if type(pid) is tuple and len(pid) == 2 and pid[0] == "deferred" and \
                type(pid[1]) is bytes:
            return Deferred._stored(pid[1], self._shared, self._modules)
        if not isinstance(pid, str) or pid not in self._shared:
            raise pickle.UnpicklingError(f"unknown shared object {pid!r}")
        return self._shared[pid]

    def find_class(self, module: str, name: str) -> object:  # noqa: D102 - pickle's hook
        if module not in self._modules:
            raise pickle.UnpicklingError(f"{module}.{name} is not allowed in a cache entry")
        return super().find_class(module, name)


class DiskCache:
    """Values kept in files between processes, keyed by the text they were computed from.

    An entry of `kind` lives in `<root>/<kind>-<version>/<sha256 of the text>.pickle`, where
    `version` is `fingerprint`, a hash of everything that decides the value's layout (the
    caller passes the code that computes and defines the values): an entry is never read by
    another version. Every entry starts with a header repeating the full fingerprint and the
    key, checked on reading; its pickle may name classes of `modules` only. Objects the caller
    already has (the SourceFile a tree's spans point to) are passed as `shared` on both sides
    and stored as references, so the value read back points to the caller's own objects.
    Entries are written to a temporary file renamed into place (readers never see half an
    entry); nothing is written while the root cannot be created or written (read-only caches
    are only read). Reading or writing never raises: a missing, corrupt, foreign or
    unreadable entry reads as None."""

    def __init__(self, kind: str, fingerprint: str, modules: frozenset[str],
                 root: Path | None = None) -> None:
        self.kind = kind
        self.fingerprint = fingerprint
        self.modules = modules
        self.root = root

    def _folder(self) -> Path | None:
        root = self.root if self.root is not None else cache_root()
        return None if root is None else root / f"{self.kind}-{self.fingerprint[:20]}"

    def _header(self, digest: str) -> bytes:
        return _MAGIC + f"{self.fingerprint}\n{digest}\n".encode("ascii")

    def load(self, text: str, shared: Mapping[str, object]) -> object | None:
        """The value stored for `text`, or None."""
        folder = self._folder()
        if folder is None:
            return None
        digest = _digest(text)
        try:
            data = (folder / f"{digest}.pickle").read_bytes()
            header = self._header(digest)
            if not data.startswith(header):
                return None
            return _unpickle(memoryview(data)[len(header):], shared, self.modules)
        except Exception:  # noqa: BLE001 - a cache entry that cannot be read is no entry
            return None

    def store(self, text: str, value: object, shared: Mapping[str, object]) -> None:
        """Keep `value` for `text`, if possible (see the class)."""
        folder = self._folder()
        if folder is None or sys.getrecursionlimit() > _MAX_PICKLE_RECURSION:
            return
        digest = _digest(text)
        temporary = None
        try:
            stream = io.BytesIO()
            stream.write(self._header(digest))
            _Pickler(stream, shared).dump(value)
            folder.mkdir(mode=0o700, parents=True, exist_ok=True)
            handle, temporary = tempfile.mkstemp(dir=folder, prefix=".", suffix=".tmp")
            with os.fdopen(handle, "wb") as out:
                out.write(stream.getvalue())
            os.replace(temporary, folder / f"{digest}.pickle")
            temporary = None
        except Exception:  # noqa: BLE001 - a cache that cannot be written is only slower
            pass
        finally:
            if temporary is not None:
                try:
                    os.unlink(temporary)
                except OSError:
                    pass


def _unpickle(data: bytes | memoryview, shared: Mapping[str, object],
              modules: frozenset[str]) -> object:
    """What `_Pickler` wrote (raises if it cannot be read)."""
    collecting = gc.isenabled()
    gc.disable()  # unpickling makes many objects, all kept: collecting finds nothing
    try:
        return _Unpickler(io.BytesIO(data), shared, modules).load()
    finally:
        if collecting:
            gc.enable()


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", errors="surrogatepass")).hexdigest()
