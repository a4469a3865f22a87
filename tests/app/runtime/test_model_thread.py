"""All model work runs on the one model thread; answers already cached never wait for it."""

from __future__ import annotations

import os
import sys
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor

import pytest
import torch

from app.runtime.errors import Abandoned
from app.runtime.model_thread import ModelThread
from app.runtime.scheduler import EXPERIMENT, INTERACTIVE, ORDINARY
from app.runtime.stepped_decoding import Batchable
from models.decoding import Stopped


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
    result = cached_registry.jobs.result
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
    blocker = ThreadPoolExecutor(1).submit(cached_registry.jobs.thread.run, release.wait, 10)

    def compute():
        calls.append(1)
        return {"answer": len(calls)}

    with ThreadPoolExecutor(3) as pool:
        answers = [pool.submit(cached_registry.jobs.result, "same", compute) for _ in range(3)]
        release.set()
        assert [a.result(timeout=10) for a in answers] == [{"answer": 1}] * 3
    assert calls == [1]
    blocker.result(timeout=10)


def test_errors_come_back_to_the_caller(cached_registry):
    def fail():
        raise ValueError("bad input")

    with pytest.raises(ValueError, match="bad input"):
        cached_registry.jobs.result("fails", fail)
    assert cached_registry.jobs.result("after", lambda: {"ok": True}) == {"ok": True}  # the thread lives on


def test_torch_threads_setting_reaches_the_model_thread():
    before = torch.get_num_threads()
    worker = ModelThread(1)
    try:
        assert worker.run(torch.get_num_threads) == 1
    finally:
        worker.close()
        torch.set_num_threads(before)


def test_a_batch_runs_side_by_side_one_thread_each_in_the_order_given():
    worker = ModelThread(2, lanes=2)
    both = threading.Barrier(2, timeout=10)  # passes only if two jobs run at the same time

    def job(n):
        def run():
            both.wait()
            return n, threading.current_thread().name, torch.get_num_threads()
        return run

    try:
        results = [f.result(timeout=10) for f in worker.run_together([job(0), job(1)])]
        assert [n for n, _, _ in results] == [0, 1]
        assert {name.split("_")[0] for _, name, _ in results} == {"models", "models-lane"}
        assert {threads for _, _, threads in results} == {1}
        assert worker.run(torch.get_num_threads) == 2  # the model thread's own count is back
    finally:
        worker.close()


def test_a_batch_keeps_the_model_thread_until_every_lane_is_done():
    worker = ModelThread(2, lanes=2)
    release, order = threading.Event(), []

    def slow():
        release.wait(10)
        order.append("slow")

    try:
        batch = worker.run_together([lambda: order.append("quick"), slow])
        later = worker.submit(lambda: order.append("later"))
        batch[0].result(timeout=10)
        assert not later.done()  # queued behind the batch while its other lane still works
        release.set()
        later.result(timeout=10)
        assert order == ["quick", "slow", "later"]
    finally:
        release.set()
        worker.close()


def test_a_failing_job_fails_alone_and_a_cancelled_batch_is_not_run():
    from app.runtime.errors import Abandoned

    worker = ModelThread(1, lanes=2)
    try:
        def fail():
            raise ValueError("bad input")

        futures = worker.run_together([fail, lambda: "fine", lambda: "also fine"])
        with pytest.raises(ValueError, match="bad input"):
            futures[0].result(timeout=10)
        assert [f.result(timeout=10) for f in futures[1:]] == ["fine", "also fine"]
        gone, release, ran = threading.Event(), threading.Event(), []
        blocker = worker.submit(release.wait, 10)
        futures = worker.run_together([lambda: ran.append(1), lambda: ran.append(2)], cancel=gone)
        gone.set()
        release.set()
        blocker.result(timeout=10)
        for future in futures:
            with pytest.raises(Abandoned):
                future.result(timeout=10)
        assert ran == []
        assert worker.dropped.as_dict() == {"skipped": 2, "stopped": 0}  # counted, not errors
        flagged = threading.Event()
        flagged.set()
        with pytest.raises(Abandoned):
            worker.run(lambda: ran.append(3), cancel=flagged)

        def stopped():
            raise Stopped()

        with pytest.raises(Stopped):
            worker.run(stopped)
        assert worker.dropped.as_dict() == {"skipped": 3, "stopped": 1} and ran == []
    finally:
        worker.close()


def test_a_batch_starts_its_jobs_in_the_order_asked_and_answers_in_the_order_given():
    worker = ModelThread(1, lanes=1)
    ran = []
    try:
        futures = worker.run_together([lambda n=n: ran.append(n) or n for n in range(3)], start=[2, 0, 1])
        assert [f.result(timeout=10) for f in futures] == [0, 1, 2]
        assert ran == [2, 0, 1]
    finally:
        worker.close()


def test_a_batch_keeps_its_lanes_while_other_programs_want_the_cpu():
    """One-thread lanes have no split operation to stall, so a busy CPU does not take them away:
    two jobs that each wait for the other finish only if both run at once."""
    worker = ModelThread(None, lanes=2)

    class Contended:
        def threads(self):
            return 1

    worker.cores = Contended()
    both = threading.Barrier(2, timeout=5)
    try:
        futures = worker.run_together([both.wait, both.wait])
        assert sorted(f.result(timeout=10) for f in futures) == [0, 1]
    finally:
        worker.close()


def _nice() -> int:
    return os.getpriority(os.PRIO_PROCESS, threading.get_native_id())


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="a thread's own nice value is Linux's")
def test_the_threads_that_run_models_step_back_and_no_other_thread_does():
    """The model thread and every lane run at `nice` above the caller's value; the caller keeps its."""
    mine = _nice()
    worker = ModelThread(1, lanes=2, nice=3)
    try:
        started, release = threading.Barrier(2, timeout=10), threading.Event()

        def both_lanes():  # each job waits for the other: one runs on each lane
            started.wait()
            return threading.current_thread().name, _nice()

        lanes = [f.result(timeout=10) for f in worker.run_together([both_lanes, both_lanes])]
        assert {name.split("_")[0] for name, _ in lanes} == {"models", "models-lane"}
        assert [nice for _, nice in lanes] == [min(19, mine + 3)] * 2
        assert worker.run(_nice) == min(19, mine + 3)
        assert _nice() == mine
        release.set()
    finally:
        worker.close()
    plain = ModelThread(1)  # nice=0 by default: as the caller
    try:
        assert plain.run(_nice) == mine
    finally:
        plain.close()


def test_interactive_work_queued_behind_an_experiment_runs_before_it_ends():
    """A compare queued while a long experiment runs starts at the experiment's next pause, and
    queued work goes most urgent first, in order of arrival within one priority."""
    worker = ModelThread(1, lanes=2)
    started, release, order = threading.Event(), threading.Event(), []

    def experiment():
        started.set()
        for _ in range(200):  # steps until the test lets it finish, pausing after each
            if release.is_set():
                break
            release.wait(0.05)
            worker.pause()
        order.append("experiment")
        return True

    try:
        long = worker.submit(experiment, priority=EXPERIMENT)
        assert started.wait(10)
        ordinary = worker.submit(lambda: order.append("ordinary"))
        later = worker.submit(lambda: order.append("later experiment"), priority=EXPERIMENT)
        batch = worker.run_together([lambda: order.append("compare"), lambda: torch.get_num_threads()])
        assert batch[1].result(timeout=10) == 1  # a lane's one intra-op thread, inside the pause
        ordinary.result(timeout=10)
        assert not long.done() and not later.done()  # both ran while the experiment still went on
        release.set()
        long.result(timeout=10)
        later.result(timeout=10)
        assert order == ["compare", "ordinary", "experiment", "later experiment"]
        assert worker.load.paused == 2 and worker.load.waiting == 0
    finally:
        release.set()
        worker.close()


def test_over_a_long_job_its_pauses_give_urgent_work_as_long_as_the_job_has_had():
    """Readers typing keep compares queued all the time, and the experiment still ends (never
    starved), its pauses running them. Steps of 2 ms and compares of 10 ms: a pause after every step
    that ran one compare would give the readers five times the experiment's own time; the account
    gives them as long as it has had, one compare's overrun at most, and not much less."""
    worker = ModelThread(1, lanes=1)
    stop, compares, steps = threading.Event(), [], []

    def compare() -> None:
        began = time.perf_counter()
        time.sleep(0.01)
        compares.append((began, time.perf_counter()))

    def typist() -> None:
        while not stop.is_set():
            worker.submit(compare, priority=INTERACTIVE).result(timeout=10)

    def experiment() -> tuple[float, float]:
        began = time.perf_counter()
        for _ in range(40):
            start = time.perf_counter()
            time.sleep(0.002)  # one step
            steps.append(time.perf_counter() - start)
            worker.pause()
        return began, time.perf_counter()

    typists = [threading.Thread(target=typist) for _ in range(4)]
    try:
        for thread in typists:
            thread.start()
        deadline = time.monotonic() + 10
        while len(compares) < 4:
            assert time.monotonic() < deadline, f"the typists ran {len(compares)} compares in 10 s, not 4"
            time.sleep(0.01)
        began, ended = worker.submit(experiment, priority=EXPERIMENT).result(timeout=10)
        during = [b - a for a, b in compares if began <= a and b <= ended]
        own = sum(steps)
        assert sum(during) <= own + max(during) + 0.005, (sum(during), own)
        assert sum(during) >= own - max(steps) - max(during), (sum(during), own)
    finally:
        stop.set()
        for thread in typists:
            thread.join(timeout=10)
        worker.close()


def test_a_pause_gives_the_long_job_its_torch_state_back():
    worker = ModelThread(2, lanes=1)
    seen = {}

    def inner():
        seen["inner"] = (torch.is_grad_enabled(), torch.is_inference_mode_enabled())
        torch.set_num_threads(1)  # as a search does (models/serving/threads.py)

    def experiment():
        with torch.no_grad():
            worker.submit(inner)  # queued from the model thread itself, run at the pause
            worker.pause()
            seen["after"] = (torch.is_grad_enabled(), torch.get_num_threads())

    try:
        worker.run(experiment, priority=EXPERIMENT)
        assert seen == {"inner": (True, False), "after": (False, 2)}
    finally:
        worker.close()


def test_a_pause_outside_the_model_thread_does_nothing():
    worker = ModelThread(1)
    release = threading.Event()
    try:
        blocker = worker.submit(release.wait, 10, priority=EXPERIMENT)
        queued = worker.submit(lambda: "ran")
        worker.pause()  # from the test's thread: runs nothing here
        assert not queued.done()
        release.set()
        assert queued.result(timeout=10) == "ran" and blocker.result(timeout=10)
    finally:
        release.set()
        worker.close()


def test_closing_cancels_what_is_queued():
    worker = ModelThread(1)
    started, release = threading.Event(), threading.Event()
    blocker = worker.submit(lambda: started.set() or release.wait(10))
    assert started.wait(10)
    queued = worker.submit(lambda: "never")
    threading.Timer(0.2, release.set).start()
    worker.close()
    assert blocker.result(timeout=10) and queued.cancelled() and worker.load.waiting == 0


class CountingPool:
    """A stepped_decoding.Pool whose sentences are (text, steps): each ends after its number of steps with
    "text after N steps", or a Stopped when its stop() says so before a step. It records the
    sentences of every join and the size of every step."""

    def __init__(self, log: dict):
        self.rows, self.log = [], log

    def __len__(self):
        return len(self.rows)

    def join(self, sentences):
        self.log.setdefault("joins", []).append([item[0] for _, item, _ in sentences])
        self.rows += [[handle, *item, 0, stop] for handle, item, stop in sentences]

    def step(self):
        stopped = [row[4]() for row in self.rows]  # asked once per row and step, as a Pool does
        ended = [(row[0], Stopped()) for row, stop in zip(self.rows, stopped, strict=True) if stop]
        self.rows = [row for row, stop in zip(self.rows, stopped, strict=True) if not stop]
        self.log.setdefault("steps", []).append(len(self.rows))
        for row in self.rows:
            row[3] += 1
        ended += [(row[0], f"{row[1]} after {row[3]} steps") for row in self.rows if row[3] == row[2]]
        self.rows = [row for row in self.rows if row[3] < row[2]]
        return ended


def _stepped(model: str, text: str, steps: int, log: dict) -> Batchable:
    return Batchable(("compare", model), (model, text), (text, steps), lambda: CountingPool(log), model)


def _behind_busy_thread(worker: ModelThread, ask):
    """`ask()` while the model thread is busy; its result once the thread is released."""
    release = threading.Event()
    busy = worker.submit(release.wait, 10, priority=INTERACTIVE)
    asked = ask()
    release.set()
    busy.result(timeout=10)
    return asked


def test_readers_sentences_of_one_model_step_together():
    worker, logs = ModelThread(1, lanes=1), {"a": {}, "b": {}}
    try:
        futures = _behind_busy_thread(worker, lambda: [
            worker.step_together(_stepped(m, t, n, logs[m])) for t, n in [("un", 1), ("deux", 2), ("trois", 3)]
            for m in "ab"])
        assert [f.result(timeout=10) for f in futures] == [
            f"{t} after {n} steps" for t, n in [("un", 1), ("deux", 2), ("trois", 3)] for _ in "ab"]
        for m in "ab":  # one join of the three, then steps of 3, 2 and 1 sentences
            assert logs[m] == {"joins": [["un", "deux", "trois"]], "steps": [3, 2, 1]}
            assert worker.load.sizes[m, 3] == 1 and worker.load.sizes[m, 1] == 1
        assert worker.load.waiting == 0 and worker.load.wait_histogram("a")[2] == 3
    finally:
        worker.close()


def test_one_model_s_sentences_are_shared_out_over_a_pool_per_lane():
    worker, log = ModelThread(1, lanes=2), {}
    try:
        futures = _behind_busy_thread(worker, lambda: [
            worker.step_together(_stepped("a", f"texte {i}", 2, log)) for i in range(6)])
        assert [f.result(timeout=10) for f in futures] == [f"texte {i} after 2 steps" for i in range(6)]
        assert sorted(len(join) for join in log["joins"]) == [3, 3]  # three on each lane, oldest first
        assert log["joins"][0] == ["texte 0", "texte 1", "texte 2"] and worker.load.sizes["a", 3] == 4
    finally:
        worker.close()


def test_at_most_pool_rows_sentences_decode_at_once_and_the_others_wait_their_turn():
    worker, log = ModelThread(1, lanes=1, pool_rows=2), {}
    gone = threading.Event()
    gone.set()  # the reader of "texte 3" typed on while it waited: never started
    try:
        futures = _behind_busy_thread(worker, lambda: [
            worker.step_together(_stepped("a", f"texte {i}", 3, log), gone if i == 3 else None)
            for i in range(5)])
        assert isinstance(futures[3].exception(timeout=10), Abandoned)
        assert [f.result(timeout=10) for i, f in enumerate(futures) if i != 3] == [
            f"texte {i} after 3 steps" for i in (0, 1, 2, 4)]
        assert log["joins"] == [["texte 0", "texte 1"], ["texte 2", "texte 4"]]
        assert max(log["steps"]) == 2
    finally:
        worker.close()


def test_a_sentence_with_nothing_to_step_with_runs_by_itself():
    worker, log = ModelThread(1, lanes=1), {}
    try:
        def stepped(text: str) -> Batchable:
            spec = _stepped("a", text, 2, log)
            return Batchable(spec.group, spec.key, spec.item, spec.pool, spec.model, lambda: f"{text} alone")
        assert worker.step_together(stepped("seul")).result(timeout=10) == "seul alone" and log == {}
        together = _behind_busy_thread(worker, lambda: [worker.step_together(stepped(t))
                                                        for t in ("un", "deux")])
        assert [f.result(timeout=10) for f in together] == ["un after 2 steps", "deux after 2 steps"]
        assert log["joins"] == [["un", "deux"]]
    finally:
        worker.close()


def test_a_sentence_joins_at_the_next_step_and_its_answer_comes_when_it_ends():
    worker, log, done = ModelThread(1), {}, threading.Event()
    try:
        long = worker.step_together(_stepped("a", "long", 10**7, log), done)
        deadline = time.monotonic() + 10
        while len(log.get("steps", [])) < 3 and time.monotonic() < deadline:
            time.sleep(0.001)
        short = worker.step_together(_stepped("a", "short", 2, log))
        assert short.result(timeout=10) == "short after 2 steps"
        assert not long.done()  # the short one did not wait for the long one to end
        assert log["joins"] == [["long"], ["short"]] and 2 in log["steps"]
        done.set()
        assert isinstance(long.exception(timeout=10), Stopped)
    finally:
        worker.close()


@pytest.mark.parametrize("overrun", [False, True])
def test_while_a_long_job_takes_a_step_readers_sentences_step_on_a_side_lane(overrun):
    """`overrun`: the pause before the long step gives urgent work nothing (an earlier one outlasted
    the job's own time); the side lane still takes the readers' sentences during the step."""
    worker, log, release, inside = ModelThread(1, lanes=2), {}, threading.Event(), threading.Event()
    stepped_on = set()

    class Watched(CountingPool):
        def step(self):
            stepped_on.add(threading.current_thread().name)
            return super().step()

    def experiment() -> str:
        if overrun:  # a 2 ms step, then a pause whose one urgent job takes 50 ms
            worker.submit(time.sleep, 0.05, priority=INTERACTIVE)
            time.sleep(0.002)
            worker.pause()
        worker.pause()  # the step after this pause is a long one
        inside.set()
        release.wait(10)
        return "done"

    try:
        long = worker.submit(experiment, priority=EXPERIMENT)
        assert inside.wait(10)
        futures = [worker.step_together(Batchable(("compare", "a"), ("a", t), (t, 3), lambda: Watched(log)))
                   for t in ("un", "deux")]
        assert [f.result(timeout=10) for f in futures] == ["un after 3 steps", "deux after 3 steps"]
        assert not long.done()  # answered during the long step, not in the job's next pause
        assert stepped_on and all(name.startswith("models-lane") for name in stepped_on)
        release.set()
        assert long.result(timeout=10) == "done"
    finally:
        release.set()
        worker.close()


def test_the_same_work_asked_twice_is_one_sentence_and_stops_only_when_nobody_wants_it():
    worker, log = ModelThread(1), {}
    try:
        first, second = _behind_busy_thread(worker, lambda: [
            worker.step_together(_stepped("a", "même", 3, log)) for _ in range(2)])
        assert first.result(timeout=10) == second.result(timeout=10) == "même after 3 steps"
        assert log["joins"] == [["même"]]
        one, other = threading.Event(), threading.Event()
        mine = worker.step_together(_stepped("a", "long", 400, log), one)
        theirs = worker.step_together(_stepped("a", "long", 400, log), other)
        one.set()  # one reader has gone: the other still wants it
        assert theirs.result(timeout=10) == "long after 400 steps"
        assert mine.result(timeout=10) == "long after 400 steps"  # settled too; nobody reads it
    finally:
        worker.close()


def test_a_reader_gone_before_its_first_step_is_not_started_and_one_gone_midway_stops():
    worker, log = ModelThread(1), {}
    gone, leaving = threading.Event(), threading.Event()
    gone.set()
    try:
        before, kept = _behind_busy_thread(worker, lambda: [
            worker.step_together(_stepped("a", "parti", 3, log), gone),
            worker.step_together(_stepped("a", "reste", 3, log))])
        assert isinstance(before.exception(timeout=10), Abandoned) and kept.result(timeout=10)
        assert log["joins"] == [["reste"]] and worker.dropped.as_dict()["skipped"] == 1
        midway = worker.step_together(_stepped("a", "long", 10**6, log), leaving)
        while len(log["joins"]) < 2:
            time.sleep(0.001)
        leaving.set()
        assert isinstance(midway.exception(timeout=10), Stopped)
        assert worker.dropped.as_dict()["stopped"] == 1
    finally:
        worker.close()


def oldest_wait(runner) -> float:
    """How long the oldest work a new request would wait behind has waited (0: none), whoever's it is."""
    return max(runner.ages().values(), default=0.0)


def test_the_wait_a_new_request_meets_is_the_age_of_the_oldest_queued_work():
    worker = ModelThread(1)
    release = threading.Event()
    try:
        assert oldest_wait(worker) == 0.0
        busy = worker.submit(release.wait, 10)
        deadline = time.monotonic() + 10
        while worker.load.waiting and time.monotonic() < deadline:  # the busy job has started
            time.sleep(0.001)
        worker.step_together(_stepped("a", "attend", 1, {}))
        worker.submit(lambda: None, priority=EXPERIMENT)  # an experiment's wait is not a reader's
        time.sleep(0.05)
        assert 0.05 <= oldest_wait(worker) < 5
        release.set()
        busy.result(timeout=10)
    finally:
        worker.close()


class FailingPool(CountingPool):
    """A pool whose every step raises: a fault inside a model's step."""

    def step(self):
        raise RuntimeError("a step failed")


def test_a_fault_in_a_pool_or_a_turn_fails_only_its_own_requests_and_the_thread_goes_on():
    worker, log = ModelThread(1, lanes=1, batching=True), {}

    def broken_pool():
        raise RuntimeError("no pool")

    try:
        futures = _behind_busy_thread(worker, lambda: [
            worker.step_together(Batchable(("compare", "bad"), ("bad", "x"), ("x", 2), broken_pool, "bad")),
            worker.step_together(Batchable(("compare", "worse"), ("worse", "x"), ("x", 2),
                                           lambda: FailingPool(log), "worse")),
            worker.step_together(_stepped("good", "un", 2, log)),
            worker.step_together(_stepped("good", "deux", 3, log))])
        with pytest.raises(RuntimeError, match="no pool"):
            futures[0].result(timeout=10)
        with pytest.raises(RuntimeError, match="a step failed"):
            futures[1].result(timeout=10)
        assert [f.result(timeout=10) for f in futures[2:]] == ["un after 2 steps", "deux after 3 steps"]
        turn = Future()
        worker._queue_turn(ORDINARY, lambda: 1 / 0, [turn])  # a turn that raises outside any job
        with pytest.raises(ZeroDivisionError):
            turn.result(timeout=10)
        assert worker.run(lambda: "still here") == "still here"  # the model thread went on
        again = worker.step_together(_stepped("good", "trois", 1, log))
        assert again.result(timeout=10) == "trois after 1 steps"
    finally:
        worker.close()
