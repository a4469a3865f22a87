"""The registry of loaded models: what loads, limits, queued work, closing."""

from __future__ import annotations

import asyncio
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from app.limits import Limits
from app.runtime.errors import Abandoned
from app.runtime.loading import load_registry, model_folders
from models.config import Seq2SeqConfig
from tests.tiny import write_tiny_checkpoints


def test_work_queued_for_a_client_that_left_is_skipped(cached_registry):
    release, gone, computed = threading.Event(), threading.Event(), []
    blocker = ThreadPoolExecutor(1).submit(cached_registry.jobs.thread.run, release.wait, 10)  # thread busy
    waiting = ThreadPoolExecutor(1).submit(cached_registry.jobs.result, "key", lambda: computed.append(1), gone)
    gone.set()  # the client hangs up while its request waits in the queue
    release.set()
    with pytest.raises(Abandoned):
        waiting.result(timeout=10)
    assert computed == [] and len(cached_registry.jobs.cache) == 0
    blocker.result(timeout=10)
    assert cached_registry.jobs.result("key", lambda: {"computed": True}) == {"computed": True}  # nothing stuck


def test_a_coroutine_gets_the_same_answer_without_holding_a_thread(cached_registry):
    """`answer` (the async routes' way) computes on the model thread and caches, like `result`."""
    ran_on = []

    def compute():
        ran_on.append(threading.current_thread().name)
        return {"computed": True}

    assert asyncio.run(cached_registry.jobs.answer("async-key", compute)) == {"computed": True}
    assert ran_on[0].startswith("models")  # the model thread
    assert asyncio.run(cached_registry.jobs.answer("async-key", compute)) == {"computed": True}
    assert len(ran_on) == 1  # the second came from the cache
    assert cached_registry.jobs.result("async-key", compute) == {"computed": True}


def test_a_new_checkpoint_folder_is_loaded_after_the_story_s_models(tmp_path):
    extra = {"lstm-wide": Seq2SeqConfig(vocab_size=8000, cell="lstm", attention="dot", d_embed=16, d_hidden=48)}
    folder = write_tiny_checkpoints(tmp_path / "checkpoints", names=("rnn", "transformer"), extra=extra)
    (folder / "notes").mkdir()  # a folder without a model is not one
    assert model_folders(folder) == ("rnn", "lstm", "lstm-additive", "lstm-dot", "transformer", "lstm-wide")
    with load_registry(folder, device="cpu", limits=Limits(max_chars=20)) as registry:
        assert registry.names == ["rnn", "transformer", "lstm-wide"]
        assert set(registry.unavailable) == {"lstm", "lstm-additive", "lstm-dot"}
        wide = registry.get("lstm-wide").capabilities
        assert wide.recurrent and wide.cross_attention and wide.attention == "dot"
        assert registry.limits.max_chars == 20


def test_a_closed_registry_takes_no_more_work(tiny_checkpoints):
    registry = load_registry(tiny_checkpoints, ("rnn",), device="cpu")
    assert registry.jobs.result("key", lambda: "done") == "done"
    registry.close()
    with pytest.raises(RuntimeError):
        registry.jobs.submit("other", lambda: "too late")
