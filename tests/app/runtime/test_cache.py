"""The result cache: recency, thread safety, a memory bound."""

from __future__ import annotations

import random
import sys
from concurrent.futures import ThreadPoolExecutor

from pydantic import BaseModel

from app.runtime.cache import ResultCache, approx_bytes
from app.schemas.translation import Attention, AttentionMap


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


def _deep_size(value, seen: set[int]) -> int:
    """What `value` really holds: sys.getsizeof of every object reachable from it, each once."""
    if id(value) in seen:
        return 0
    seen.add(id(value))
    if isinstance(value, BaseModel):  # its fields, and the set naming those that were given
        fields = _deep_size(value.__dict__, seen) + _deep_size(value.model_fields_set, seen)
        return sys.getsizeof(value) + fields
    listed = isinstance(value, list | tuple | set)
    inside = value.items() if isinstance(value, dict) else value if listed else ()
    parts = [x for pair in inside for x in pair] if isinstance(value, dict) else list(inside)
    return sys.getsizeof(value) + sum(_deep_size(x, seen) for x in parts)


def test_the_memory_estimate_is_close_to_what_a_result_really_holds():
    """An attention answer (maps of rounded floats, each a distinct object as rounding makes
    them): the estimate is at least what sys.getsizeof counts and not far over it. Measured on the
    shipped Transformer (docs/SERVER.md): 1.05x for a 500-character result, RSS growing as the estimate."""
    rng = random.Random(0)
    pieces = [f"▁mot{i}" for i in range(60)]
    maps = [AttentionMap(kind="encoder", layer=layer, head=head, rows=pieces, cols=pieces,
                         weights=[[round(rng.random(), 4) for _ in pieces] for _ in pieces])
            for layer in range(3) for head in range(8)]
    result = Attention(model="transformer", translation="I eat bread.", source_tokens=pieces,
                       target_tokens=pieces[:4], maps=maps)
    estimate, real = approx_bytes(result), _deep_size(result, set())
    assert real > 2**20
    assert 1.0 <= estimate / real <= 1.2, (estimate, real)
