"""Work nobody waits for yet (the default sentence's answers at start-up) goes behind every reader's,
and admission never refuses a reader for it."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor

from app.runtime.cache import ResultCache
from app.runtime.jobs import Jobs
from app.runtime.model_thread import ModelThread
from app.runtime.scheduler import INTERACTIVE
from app.runtime.stepped_decoding import Batchable
from tests.app.runtime.test_model_thread import oldest_wait


def _held(worker: ModelThread) -> threading.Event:
    """The model thread kept busy until the returned event is set."""
    release = threading.Event()
    worker.submit(release.wait, 10, priority=INTERACTIVE)
    return release


def test_work_behind_readers_goes_after_a_reader_and_never_counts_as_a_wait():
    worker = ModelThread(1, lanes=1)
    jobs, order = Jobs(worker, ResultCache(16)), []
    try:
        release = _held(worker)
        with jobs.behind_readers():
            ahead = jobs.submit("ahead", lambda: order.append("ahead") or "a")
        time.sleep(0.2)
        assert oldest_wait(jobs) == 0.0  # admission (app/admission.py) sees no queue
        reader = jobs.submit("reader", lambda: order.append("reader") or "r")  # queued later, runs first
        time.sleep(0.1)
        assert 0.05 < oldest_wait(jobs) < 5
        release.set()
        assert (reader.result(timeout=10), ahead.result(timeout=10)) == ("r", "a")
        assert order == ["reader", "ahead"]
        reader_again = jobs.submit("reader 2", lambda: "r2")  # outside the block: as before
        assert reader_again.result(timeout=10) == "r2"
    finally:
        worker.close()


def test_a_comparison_behind_readers_is_not_stepped_with_theirs():
    worker = ModelThread(1, lanes=1, batching=True)
    jobs = Jobs(worker, ResultCache(16))

    def never_pooled():
        raise AssertionError("stepped with the readers' sentences")

    spec = Batchable(("compare", "m"), ("m", "texte"), "texte", never_pooled, "m", lambda: "alone")
    try:
        release = _held(worker)
        with jobs.behind_readers():
            [answer] = jobs.submit_together([("m", ("m", "texte"), lambda: "computed", spec)])
        time.sleep(0.2)
        assert oldest_wait(jobs) == 0.0 and worker.stepped.idle()
        release.set()
        assert answer.result(timeout=10) == "computed"
    finally:
        worker.close()


def test_behind_readers_holds_only_on_the_thread_that_entered_it():
    worker = ModelThread(1, lanes=1)
    jobs = Jobs(worker, ResultCache(16))
    try:
        release = _held(worker)
        with jobs.behind_readers(), ThreadPoolExecutor(1) as pool:
            other = pool.submit(jobs.submit, "other", lambda: "o").result()
            time.sleep(0.2)
            assert oldest_wait(jobs) > 0.1  # a reader's request from another thread counts
        release.set()
        assert other.result(timeout=10) == "o"
    finally:
        worker.close()
