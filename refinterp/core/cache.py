"""Bounded caches: what refinterp keeps between calls (parsed files, loaded programs, facts
derived from a syntax tree) is kept for the most recently used keys only, never growing without
bound. A `BoundedCache` is keyed by value; an `IdentityCache` by the very object, which each of
its entries holds (so no other object can take its `id()` while the entry lives)."""

from __future__ import annotations

from collections import OrderedDict
from typing import Generic, Hashable, TypeVar

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
