"""The result cache: recency, thread safety, a memory bound."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from app.services.cache import ResultCache


def test_cache_keeps_the_most_recent_results():
    cache, computed = ResultCache(2), []

    def compute(key):
        computed.append(key)
        return {"key": key}

    for key in ("a", "b", "a", "c", "b", "a"):
        cache.get_or_compute(key, lambda key=key: compute(key))
    # a, b computed; a hit (now most recent); c evicts b; b evicts a; a recomputed
    assert computed == ["a", "b", "c", "b", "a"] and len(cache) == 2


def test_cache_survives_many_threads():
    cache = ResultCache(16)
    with ThreadPoolExecutor(max_workers=8) as pool:
        results = list(pool.map(lambda i: cache.get_or_compute(i % 40, lambda: {"v": i % 40}), range(4000)))
    assert [r["v"] for r in results] == [i % 40 for i in range(4000)]
    assert len(cache) == 16


def test_cache_is_bounded_by_memory_as_well_as_entries():
    big = {"weights": [[0.5] * 1000 for _ in range(100)]}  # ~3.2 MB as Python objects
    cache = ResultCache(100, max_bytes=8 * 2**20)
    for i in range(10):
        cache.get_or_compute(i, lambda: big)
    assert len(cache) == 2 and cache.bytes <= 8 * 2**20
    assert cache.get_or_compute(9, lambda: "recomputed") is big  # the newest stayed
    tiny = ResultCache(100, max_bytes=1000)
    assert tiny.get_or_compute("k", lambda: big) is big and len(tiny) == 0  # too big to keep
