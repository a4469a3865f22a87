"""A small thread-safe LRU cache of finished results, so live typing that revisits a prefix is
instant. Values are response models (app/schemas/) that nobody mutates after they are stored.

Bounded twice: by entries and by an estimate of the memory the entries hold. One long sentence's
Transformer maps are large as Python objects, so a count alone could grow a replica by gigabytes; a
result bigger than the whole budget is simply not kept. The estimate follows a deep sys.getsizeof
for the big results that fill the budget (tests/app/runtime/test_cache.py holds it within 1.0-1.2x;
docs/SERVER.md, "Load and memory"), so the process grows as the estimate does while the cache fills."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any

from pydantic import BaseModel

# Rough CPython sizes: a float in a list costs its 24-byte object plus an 8-byte slot.
_NUMBER_BYTES, _CONTAINER_BYTES = 32, 64
MISSING = object()  # what `get` returns for a key not stored


def approx_bytes(value: Any) -> int:
    """A fast over-estimate of the memory a JSON-like value (or a response model made of them)
    holds (no deep sys.getsizeof walk)."""
    if isinstance(value, BaseModel):
        return _CONTAINER_BYTES + approx_bytes(value.__dict__)
    if isinstance(value, dict):
        return _CONTAINER_BYTES + sum(approx_bytes(k) + approx_bytes(v) for k, v in value.items())
    if isinstance(value, list | tuple):
        # the answers' lists are uniform: a row of numbers, or of strings (labels), costed at once
        if value and isinstance(value[0], int | float):
            return _CONTAINER_BYTES + _NUMBER_BYTES * len(value)
        if value and isinstance(value[0], str):
            return _CONTAINER_BYTES + 50 * len(value) + sum(map(len, value))
        return _CONTAINER_BYTES + sum(approx_bytes(x) for x in value)
    if isinstance(value, str):
        return 50 + len(value)
    return _NUMBER_BYTES


class ResultCache:
    def __init__(self, size: int, max_bytes: int = 64 * 2**20):
        self.size = size
        self.max_bytes = max_bytes
        self._items: OrderedDict[Hashable, tuple[Any, int]] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()
        self.hits = self.misses = 0  # lookups, for GET /metrics

    def get(self, key: Hashable, count: bool = True) -> Any:
        """The stored value (now the most recent), or MISSING; `count`: a request's lookup, counted
        as a hit or a miss (a request looks once, `Jobs.submit`)."""
        with self._lock:
            if key not in self._items:
                self.misses += count
                return MISSING
            self.hits += count
            self._items.move_to_end(key)
            return self._items[key][0]

    def get_or_compute(self, key: Hashable, compute: Callable[[], Any]) -> Any:
        """The stored value for `key`, else `compute()`, stored. It runs outside the lock: lookups
        from other threads never wait for a computation."""
        value = self.get(key, count=False)  # the request's own lookup was counted when it asked
        if value is not MISSING:
            return value
        value = compute()
        if self.size > 0:
            cost = approx_bytes(value)
            if cost <= self.max_bytes:
                self._store(key, value, cost)
        return value

    def _store(self, key: Hashable, value: Any, cost: int) -> None:
        with self._lock:
            if key in self._items:
                self._bytes -= self._items.pop(key)[1]
            self._items[key] = (value, cost)
            self._bytes += cost
            while len(self._items) > self.size or self._bytes > self.max_bytes:
                self._bytes -= self._items.popitem(last=False)[1][1]

    @property
    def bytes(self) -> int:
        return self._bytes

    def __len__(self) -> int:
        return len(self._items)

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
            self._bytes = 0
