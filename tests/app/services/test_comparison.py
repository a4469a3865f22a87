"""The comparison service: every model's work queued at once, answers handed over one by one."""

from __future__ import annotations

import asyncio
import threading
from concurrent.futures import Future, ThreadPoolExecutor

import pytest

from app.runtime.errors import Abandoned
from app.runtime.gone import Gone
from app.runtime.loading import load_registry
from app.runtime.model_thread import ModelThread
from app.runtime.scheduler import INTERACTIVE
from app.schemas.translation import Attention, AttentionMap, ModelFailure, Translation
from app.services.comparison import _settled, as_ready, comparison, queue_comparison
from models.decoding import Stopped
from tests.app.conftest import TEXT


def test_answers_come_one_by_one_and_all_work_is_queued_at_once(cached_registry, monkeypatch):
    """The first answer is handed over while the next model still works; all the models' work is
    queued as one batch (no gap between models; side by side where there are cores)."""
    release, queued = threading.Event(), []
    model = cached_registry.get("transformer").model
    real_encode = model.encode_with_internals

    def slow_encode(*args, **kwargs):
        release.wait(10)
        return real_encode(*args, **kwargs)

    monkeypatch.setattr(model, "encode_with_internals", slow_encode)
    worker = cached_registry.jobs.thread
    real_together = worker.run_together
    monkeypatch.setattr(worker, "run_together",
                        lambda jobs, *rest, **kw: queued.append(len(jobs)) or real_together(jobs, *rest, **kw))
    answers = comparison(cached_registry, TEXT, ("lstm", "transformer"))
    assert queued == [2]  # both queued, as one batch, before the first answer is read
    assert next(answers).model == "lstm"  # while the transformer waits
    release.set()
    assert next(answers).model == "transformer"
    assert list(answers) == []


def test_when_the_client_has_gone_the_rest_is_not_computed(cached_registry, monkeypatch):
    release, gone, computed = threading.Event(), threading.Event(), []
    blocker = ThreadPoolExecutor(1).submit(cached_registry.jobs.thread.run, release.wait, 10)  # thread busy
    model = cached_registry.get("lstm").model
    real_encode = model.encode
    monkeypatch.setattr(model, "encode", lambda *a, **k: computed.append(1) or real_encode(*a, **k))
    answers = comparison(cached_registry, TEXT, ("lstm", "transformer"), cancel=gone)
    gone.set()  # the client hangs up while both models wait in the queue
    release.set()
    assert list(answers) == []  # the stream just ends: nobody is there to read it
    assert computed == [] and len(cached_registry.jobs.cache) == 0
    blocker.result(timeout=10)


def test_side_by_side_answers_are_the_one_by_one_answers(cached_registry):
    """Run together on two lanes, every model answers exactly as /api/attention or /api/translate
    answers it alone on the model thread."""
    from app.services.maps import attention_maps
    from app.services.translation import translation

    names = tuple(cached_registry.names)
    together = {a.model: a for a in comparison(cached_registry, TEXT, names)}
    cached_registry.jobs.cache.clear()
    for name in names:
        entry = cached_registry.get(name)
        alone = attention_maps(cached_registry, name, TEXT) if entry.capabilities.attention_kinds else \
            Attention(**dict(translation(cached_registry, name, TEXT)), maps=[])
        assert together[name] == alone, name


def test_the_model_slowest_per_piece_lately_starts_first(cached_registry, monkeypatch):
    worker, started = cached_registry.jobs.thread, []
    real_together = worker.run_together
    monkeypatch.setattr(worker, "run_together",
                        lambda jobs, cancel, start, **kw: started.append(start)
                        or real_together(jobs, cancel, start, **kw))
    list(comparison(cached_registry, TEXT, ("lstm", "transformer")))
    assert set(cached_registry.jobs.seconds) == {"lstm", "transformer"}
    cached_registry.jobs.seconds.update(lstm=9.0, transformer=1.0)
    list(comparison(cached_registry, "Le chat dort.", ("lstm", "transformer")))
    assert started[-1] == [0, 1]  # lstm first
    cached_registry.jobs.seconds.update(lstm=1.0, transformer=9.0)
    list(comparison(cached_registry, "Il pleut.", ("lstm", "transformer")))
    assert started[-1] == [1, 0]


def test_a_model_s_time_is_per_source_piece_a_running_mean_and_a_cached_answer_is_no_time(
        cached_registry, monkeypatch):
    """Live typing times each model on whatever prefix it last finished: per piece, a transformer
    timed on a long text and an LSTM on a short one compare fairly."""
    clock = iter([10.0, 10.5, 20.0, 20.25])
    monkeypatch.setattr("app.runtime.jobs.time.perf_counter", lambda: next(clock))
    registry = cached_registry
    registry.jobs.seconds.clear()
    assert registry.jobs._timed("transformer", 8, lambda: "done") == "done"  # 0.5 s over 8 pieces
    assert registry.jobs.seconds == {"transformer": 0.0625}
    registry.jobs._timed("transformer", 1, lambda: "done")  # 0.25 s over 1 piece: the mean of the two rates
    assert registry.jobs.seconds["transformer"] == (0.0625 + 0.25) / 2
    monkeypatch.undo()
    list(comparison(registry, TEXT, ("lstm",)))
    timed = dict(registry.jobs.seconds)
    list(comparison(registry, TEXT, ("lstm",)))  # cached: nothing ran, nothing timed
    assert registry.jobs.seconds == timed


def _lines_of(pending, take=None):
    """as_ready's lines, read on an event loop (all of them, or the first `take` and then leave)."""

    async def read():
        lines, stream = [], as_ready(pending)
        async for line in stream:
            lines.append(line)
            if len(lines) == take:
                await stream.aclose()
                break
        return lines

    return asyncio.run(read())


def _translated(name: str) -> Translation:
    return Translation(model=name, translation="Hi.", source_tokens=["▁Salut", "."], target_tokens=["▁Hi", "."])


def _attended(name: str) -> Attention:
    one = AttentionMap(kind="cross", layer=0, head=0, rows=["▁Hi", "."], cols=["▁Salut", "."],
                       weights=[[1.0, 0.0], [0.0, 1.0]])
    return Attention(**dict(_translated(name)), maps=[one])


def test_the_event_loop_s_stream_hands_over_the_first_finished_first():
    first, second, failed = Future(), Future(), Future()
    timer = threading.Timer(0.05, lambda: (second.set_result(_attended("b")),
                                           first.set_result(_translated("a")),
                                           failed.set_exception(RuntimeError("broke"))))
    timer.start()
    lines = _lines_of([("a", first), ("b", second), ("c", failed)])
    timer.join()
    assert [line.model for line in lines][0] in ("a", "b")  # whichever the loop saw done first
    assert sorted(lines, key=lambda line: line.model) == [
        Attention(**dict(_translated("a")), maps=[]),  # no attention: no maps, as /api/attention's shape
        _attended("b"),
        ModelFailure(model="c", error="RuntimeError: broke"),  # one failure leaves the others standing
    ]


def test_the_event_loop_s_stream_ends_when_the_client_has_gone_and_drops_what_has_not_started():
    done, stopped, waiting = Future(), Future(), Future()
    done.set_result(_attended("a"))
    assert _lines_of([("a", done), ("b", waiting)], take=1) == [_attended("a")]
    assert waiting.cancelled()  # the model thread skips a cancelled job (worker.run_together)
    stopped.set_exception(Stopped())
    later = Future()
    assert _lines_of([("b", stopped), ("c", later)]) == []
    assert later.cancelled()


def test_the_event_loop_s_stream_ends_as_soon_as_a_newer_text_supersedes_it():
    """Its work still waits for the model thread: the stream ends at once all the same (so the
    request gives back its admission slot), and the waiting work is cancelled, not left to its turn."""
    gone, done, waiting = Gone(), Future(), Future()
    done.set_result(_attended("a"))

    async def read():
        lines = []
        async for line in as_ready([("a", done), ("b", waiting)], gone):
            lines.append(line)
            threading.Timer(0.05, gone.set).start()  # set from another thread, as a newer request may
        return lines

    assert asyncio.run(asyncio.wait_for(read(), timeout=2)) == [_attended("a")]
    assert waiting.cancelled()


def test_a_flag_already_set_ends_the_stream_before_any_answer():
    gone, waiting = Gone(), Future()
    gone.set()
    assert asyncio.run(asyncio.wait_for(_collect(as_ready([("b", waiting)], gone)), timeout=2)) == []
    assert waiting.cancelled()


async def _collect(stream):
    return [line async for line in stream]


def test_the_event_loop_s_answers_are_comparison_s(cached_registry):
    names = ("lstm", "transformer")
    streamed = _lines_of(queue_comparison(cached_registry, TEXT, names))
    assert sorted(streamed, key=lambda a: a.model) == sorted(comparison(cached_registry, TEXT, names),
                                                             key=lambda a: a.model)


@pytest.mark.parametrize("error", [Abandoned(), Stopped()])
def test_work_dropped_after_its_reader_left_is_never_logged_as_unretrieved(error):
    """The stream's reader stops reading mid-stream, the model thread settles the rest with Stopped
    or Abandoned, and the stream is then dropped without ever being closed (its `finally` never
    runs): asyncio must not report an exception nobody retrieved, which would put a traceback in
    the log for the server doing its job."""
    import gc
    import sys

    reported = []

    async def scenario():
        asyncio.get_running_loop().set_exception_handler(lambda loop, context: reported.append(context))
        sys.set_asyncgen_hooks(finalizer=lambda agen: None)  # a dropped stream is never closed
        first, rest = Future(), [Future(), Future()]
        stream = as_ready([("a", first), ("b", rest[0]), ("c", rest[1])])
        first.set_result(_attended("a"))
        assert (await anext(stream)).model == "a"
        for job in rest:  # the model thread settles the rest while nobody reads
            job.set_running_or_notify_cancel()
            job.set_exception(error)
        for _ in range(5):
            await asyncio.sleep(0)  # their states reach the loop's futures
        del stream
        gc.collect()

    hooks = sys.get_asyncgen_hooks()
    try:
        asyncio.run(scenario())
    finally:
        sys.set_asyncgen_hooks(*hooks)
    gc.collect()
    assert [c for c in reported if "never retrieved" in c.get("message", "")] == []


BATCHED = ["Je mange du pain.", "Où est la gare ?", "Il pleut depuis ce matin.", "Tu", "Je mange du pain."]


def _compares_queued_together(registry) -> list[list[dict]]:
    """BATCHED's compares queued while the model thread is busy, so they all wait for one turn."""
    release = threading.Event()
    busy = registry.jobs.thread.submit(release.wait, 10, priority=INTERACTIVE)
    queued = [queue_comparison(registry, text) for text in BATCHED]
    release.set()
    busy.result(timeout=10)
    return [[_settled(name, future).model_dump() for name, future in pending] for pending in queued]


def _weights(answer: dict) -> list[float]:
    return [w for m in answer["maps"] for row in m["weights"] for w in row]


def test_readers_compares_batched_give_each_reader_its_own_answers(tiny_checkpoints):
    """With batching on, several readers' compares are stepped together, one step of each model for
    all their texts: every reader gets what its compare alone answers, the same translations, pieces
    and map labels, the maps within 1e-3 of their value (a batched product sums in another order:
    models/serving/batch.py)."""
    alone = load_registry(tiny_checkpoints, device="cpu", cache_size=0)
    together = load_registry(tiny_checkpoints, device="cpu", cache_size=0,
                             thread=ModelThread(1, lanes=2, batching=True))
    try:
        expected = _compares_queued_together(alone)
        got = _compares_queued_together(together)
        sizes = together.jobs.thread.load.sizes
        for name in together.names:  # every model stepped several readers' texts at once
            assert max(size for model, size in sizes if model == name) > 1
        assert max(size for _, size in alone.jobs.thread.load.sizes) == 1
        assert [[a["model"] for a in answers] for answers in got] == [[a["model"] for a in answers]
                                                                        for answers in expected]
        for answers, wanted in zip(got, expected, strict=True):
            for answer, want in zip(answers, wanted, strict=True):
                assert {**answer, "maps": None} == {**want, "maps": None}
                assert [(m["kind"], m["layer"], m["head"], m["rows"], m["cols"]) for m in answer["maps"]] == \
                    [(m["kind"], m["layer"], m["head"], m["rows"], m["cols"]) for m in want["maps"]]
                assert _weights(answer) == pytest.approx(_weights(want), rel=1e-3, abs=1e-6)
    finally:
        alone.close()
        together.close()


def test_a_model_failing_in_a_batch_fails_for_each_reader_and_the_others_answer(tiny_checkpoints, monkeypatch):
    together = load_registry(tiny_checkpoints, ("lstm", "transformer"), device="cpu", cache_size=0,
                             thread=ModelThread(1, lanes=2, batching=True))
    try:
        def broken(*args, **kwargs):
            raise RuntimeError("weights on fire")

        monkeypatch.setattr(together.get("lstm").model, "encode_with_internals", broken)
        for answers in _compares_queued_together(together):
            by_model = {answer["model"]: answer for answer in answers}
            assert by_model["lstm"]["error"] == "RuntimeError: weights on fire"
            assert by_model["transformer"]["maps"]
        assert max(size for model, size in together.jobs.thread.load.sizes if model == "transformer") > 1
    finally:
        together.close()
