"""A small thread-safe least-recently-used memo, optionally with an expiry, for this process's caches
(decoded gold sets, board snapshots, arranged and rendered pages). In the ground layer, not in app/http: the
services' caches use it as much as the pages' (app/http/caching.py), and it knows nothing of either."""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

V = TypeVar("V")
_MISSING = object()


class LRU(Generic[V]):
    """At most `size` values; with `ttl` (seconds, read from a callable so configuration can change it) a
    value is forgotten that long after it was stored."""

    def __init__(self, size: int, ttl: Callable[[], float] | None = None):
        self.size = size
        self._ttl = ttl
        self._items: OrderedDict[Hashable, tuple[float, V]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: Hashable, default: V | None = None) -> V | None:
        now = time.monotonic()
        with self._lock:
            found = self._items.get(key, _MISSING)
            if found is _MISSING or (self._ttl is not None and found[0] <= now):  # type: ignore[index]
                return default
            self._items.move_to_end(key)
            return found[1]  # type: ignore[index]

    def put(self, key: Hashable, value: V) -> V:
        expires = time.monotonic() + self._ttl() if self._ttl is not None else 0.0
        with self._lock:
            self._items[key] = (expires, value)
            self._items.move_to_end(key)
            while len(self._items) > self.size:
                self._items.popitem(last=False)
        return value

    def get_or_make(self, key: Hashable, make: Callable[[], V]) -> V:
        """The value kept for `key`, else `make()` (called outside the lock: two threads may both make it)."""
        found = self.get(key, _MISSING)  # type: ignore[arg-type]
        if found is not _MISSING:
            return found  # type: ignore[return-value]
        return self.put(key, make())

    def values(self) -> list[V]:
        """The values kept now, least recently used first (expired ones included until they are replaced)."""
        with self._lock:
            return [value for _expires, value in self._items.values()]

    def clear(self) -> None:
        with self._lock:
            self._items.clear()

    def __len__(self) -> int:
        return len(self._items)
