"""All model work runs on the one model thread; answers already cached never wait for it."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import pytest
import torch

from app.services.worker import ModelThread


def test_models_load_and_run_on_the_model_thread(cached_registry, monkeypatch):
    from app.services import maps

    threads = []
    real_decode = maps.decode
    monkeypatch.setattr(maps, "decode",
                        lambda *a, **k: threads.append(threading.current_thread().name) or real_decode(*a, **k))
    with ThreadPoolExecutor(4) as pool:
        list(pool.map(lambda text: maps.attention_maps(cached_registry, "transformer", text),
                      ["Je mange.", "Tu manges.", "Il mange.", "Nous mangeons."]))
    assert len(threads) == 4 and all(name.startswith("models") for name in threads)


def test_a_cached_answer_does_not_wait_behind_a_computation(cached_registry):
    result = cached_registry.result
    result("ready", lambda: {"answer": 1})
    release = threading.Event()
    busy = ThreadPoolExecutor(1).submit(result, "slow", lambda: release.wait(10) and {"answer": 2})
    try:
        got = ThreadPoolExecutor(1).submit(result, "ready", lambda: {"answer": "recomputed"})
        assert got.result(timeout=2) == {"answer": 1}  # while the model thread is still busy
        assert not busy.done()
    finally:
        release.set()
    assert busy.result(timeout=10) == {"answer": 2}


def test_identical_requests_queued_together_compute_once(cached_registry):
    release, calls = threading.Event(), []
    blocker = ThreadPoolExecutor(1).submit(cached_registry.worker.run, release.wait, 10)

    def compute():
        calls.append(1)
        return {"answer": len(calls)}

    with ThreadPoolExecutor(3) as pool:
        answers = [pool.submit(cached_registry.result, "same", compute) for _ in range(3)]
        release.set()
        assert [a.result(timeout=10) for a in answers] == [{"answer": 1}] * 3
    assert calls == [1]
    blocker.result(timeout=10)


def test_errors_come_back_to_the_caller(cached_registry):
    def fail():
        raise ValueError("bad input")

    with pytest.raises(ValueError, match="bad input"):
        cached_registry.result("fails", fail)
    assert cached_registry.result("after", lambda: {"ok": True}) == {"ok": True}  # the thread lives on


def test_torch_threads_setting_reaches_the_model_thread():
    before = torch.get_num_threads()
    worker = ModelThread(1)
    try:
        assert worker.run(torch.get_num_threads) == 1
    finally:
        worker.close()
        torch.set_num_threads(before)
