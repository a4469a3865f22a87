"""Many threads at once get exactly the answers of serial calls: nothing is shared between
requests, and the cache only ever returns what a fresh computation would."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from app.services.cache import ResultCache

SENTENCES = ["Je mange du pain.", "Il fait beau aujourd'hui.", "Où est la gare ?", "Nous avons faim."]
CALLS = [(path, model, text)
         for path, model in [("/api/attention", "transformer"), ("/api/attention", "lstm-dot"),
                             ("/api/translate", "lstm-additive"), ("/api/translate", "rnn"),
                             ("/api/gradients", None)]
         for text in SENTENCES]


def _call(client, path, model, text):
    body = {"text": text} if model is None else {"text": text, "model": model}
    response = client.post(path, json=body)
    assert response.status_code == 200, response.text
    return response.json()


def test_threads_get_the_serial_answers(client):
    serial = [_call(client, *call) for call in CALLS]
    with ThreadPoolExecutor(max_workers=8) as pool:
        parallel = list(pool.map(lambda call: _call(client, *call), CALLS * 2))
    assert parallel == serial * 2


def test_beam_search_is_repeatable_under_threads(client):
    call = ("/api/translate", "transformer", SENTENCES[1])
    body = {"text": call[2], "model": call[1], "beam_size": 5, "top_k": 4}
    serial = client.post(call[0], json=body).json()
    with ThreadPoolExecutor(max_workers=6) as pool:
        answers = list(pool.map(lambda _: client.post(call[0], json=body).json(), range(12)))
    assert all(answer == serial for answer in answers)


def test_cache_keeps_the_most_recent_results():
    cache, computed = ResultCache(2), []

    def compute(key):
        computed.append(key)
        return {"key": key}

    for key in ("a", "b", "a", "c", "b", "a"):
        cache.get_or_compute(key, lambda key=key: compute(key))
    # a, b computed; a hit (now most recent); c evicts b; b evicts a; a recomputed
    assert computed == ["a", "b", "c", "b", "a"] and len(cache) == 2


def test_cache_hit_equals_fresh_answer(tiny_checkpoints):
    from app.services.registry import load_registry
    from app.services.translate import translate

    cached = load_registry(tiny_checkpoints, device="cpu", cache_size=8)
    first = translate(cached, "lstm", "  Je   mange du pain. ")
    again = translate(cached, "lstm", "Je mange du pain.")  # same normalised text: a hit
    assert again is first and len(cached.cache) == 1
    fresh = translate(load_registry(tiny_checkpoints, device="cpu", cache_size=0), "lstm", "Je mange du pain.")
    assert fresh == first


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
