"""Stepper processes (app/runtime/stepper_client.py): readers' compares stepped out of the server's process
give the answers the model thread gives, their figures reach /metrics, work nobody wants is dropped
there, and a process that dies leaves the server answering."""

from __future__ import annotations

import gc
import json
import os
import signal
import time
import weakref
from concurrent.futures import ThreadPoolExecutor

import pytest
from fastapi.testclient import TestClient

from app.main import create_app
from app.runtime.scheduler import homes, route
from app.runtime.stepper_child import worth_reporting
from app.services.comparison import stepped as stepped_job
from tests.app.conftest import TEXT, tiny_settings

TEXTS = [TEXT, "Il pleut.", "Où est la gare ?", "Nous avons un chat et un chien.", "Tu es en retard."]


def lines(response) -> list[dict]:
    assert response.status_code == 200, response.text
    return sorted((json.loads(line) for line in response.text.splitlines()), key=lambda a: a["model"])


def ready(client: TestClient, count: int = 2, within: float = 60.0):
    steppers = client.app.state.registry.jobs.steppers
    deadline = time.monotonic() + within
    while steppers.ready() < count:
        assert time.monotonic() < deadline, "the stepper processes did not start"
        time.sleep(0.05)
    return steppers


@pytest.fixture(scope="module")
def stepped(tiny_checkpoints):
    with TestClient(create_app(tiny_settings(tiny_checkpoints, step_processes=2))) as test_client:
        ready(test_client)
        yield test_client


def test_health_says_how_many_processes_step_and_how_many_are_ready(stepped, client):
    assert stepped.get("/api/health").json()["stepping"] == {"processes": 2, "ready": 2}
    assert client.get("/api/health").json()["stepping"] == {"processes": 0, "ready": 0}  # the model thread's


def test_the_models_are_shared_out_by_size_largest_first():
    assert homes({"a": 10, "b": 6, "c": 5, "d": 1}, 2) == {"a": 0, "b": 1, "c": 1, "d": 0}
    assert homes({"a": 10, "b": 6}, 1) == {"a": 0, "b": 0}


def test_a_model_goes_home_while_enough_models_have_work_else_where_it_has_fewest():
    # one model typed into: shared out over both processes, the home first among equals
    assert route("a", 0, {}, [0, 1]) == 0
    assert route("a", 0, {"a": [3, 2]}, [0, 1]) == 1
    assert route("a", 1, {"a": [2, 2]}, [0, 1]) == 1
    # two models with work for two processes: each at home, however full
    assert route("a", 0, {"a": [9, 0], "b": [0, 1]}, [0, 1]) == 0
    # a home not ready: the first ready process
    assert route("a", 1, {"a": [0, 0]}, [0]) == 0


def test_a_lone_reader_gets_the_model_threads_answers(stepped, client):
    """One compare at a time is each model's one-sentence search in its process: the same lines,
    number for number, as the model thread's."""
    for text in TEXTS[:3]:
        body = {"text": text}
        assert lines(stepped.post("/api/compare", json=body)) == lines(client.post("/api/compare", json=body))


def test_readers_at_once_get_their_own_translations_and_maps_within_rounding(stepped, client):
    """Many compares at once are stepped together in the processes: each reader's translation is
    the one its text gets alone, and its maps' weights agree within 1e-3 of their value."""
    alone = {text: lines(client.post("/api/compare", json={"text": text})) for text in TEXTS}
    with ThreadPoolExecutor(len(TEXTS) * 2) as pool:
        together = list(pool.map(lambda t: (t, lines(stepped.post("/api/compare", json={"text": t}))),
                                 TEXTS * 2))
    for text, got in together:
        want = alone[text]
        assert [a["translation"] for a in got] == [a["translation"] for a in want]
        for mine, theirs in zip(got, want, strict=True):
            assert len(mine["maps"]) == len(theirs["maps"])
            for m, t in zip(mine["maps"], theirs["maps"], strict=True):
                for row, other in zip(m["weights"], t["weights"], strict=True):
                    assert row == pytest.approx(other, rel=1e-3, abs=1e-6)


def test_the_processes_figures_reach_metrics(stepped):
    before = stepped.get("/metrics").text
    stepped.post("/api/compare", json={"text": "Le chat noir dort sur le lit.", "models": ["transformer"]})
    deadline = time.monotonic() + 5
    while (after := stepped.get("/metrics").text) == before or 'first_step_seconds_count{model="transformer"}' \
            not in after:
        assert time.monotonic() < deadline, "no report from the stepper process"
        time.sleep(0.05)
    assert 'attention_lab_model_batch_size_count{model="transformer"}' in after


def test_a_sentence_nobody_waits_for_is_dropped_in_its_process(stepped):
    """Futures cancelled by their readers: the process is told, nothing is left sent, and the work
    is counted as dropped or it ended before the word came."""
    registry = stepped.app.state.registry
    steppers = registry.jobs.steppers
    from app.services.comparison import queue_comparison

    dropped = sum(registry.jobs.thread.dropped.as_dict().values())
    pending = [queue_comparison(registry, f"{text} {i}") for i, text in enumerate(TEXTS * 4)]
    for per_text in pending:
        for _, future in per_text:
            future.cancel()
    deadline = time.monotonic() + 10
    while steppers._sent:
        assert time.monotonic() < deadline, "sentences left behind"
        time.sleep(0.05)
    time.sleep(0.5)  # the processes' answers to the drops
    assert sum(registry.jobs.thread.dropped.as_dict().values()) > dropped


def test_a_sentence_is_freed_as_soon_as_its_readers_let_go(stepped):
    """Nothing holds a sentence's Future (and so its answer) in a reference cycle once it is settled,
    answered or cancelled: reference counting frees it, without waiting for a full garbage
    collection (under load, those collections were what stopped the event loop)."""
    registry = stepped.app.state.registry
    steppers = registry.jobs.steppers

    def job(model: str, text: str):
        return stepped_job(registry, model, registry.source(text), None)

    gc.collect()
    gc.disable()
    try:
        answered = steppers.step_together(job("transformer", "Il fait beau."))
        answered.result(timeout=30)
        cancelled = steppers.step_together(job("lstm", "Il fait froid."))
        cancelled.cancel()
        freed = [weakref.ref(answered), weakref.ref(cancelled)]
        del answered, cancelled
        assert [future() for future in freed] == [None, None]
    finally:
        gc.enable()


@pytest.mark.slow
def test_a_starting_process_is_said_and_one_that_dies_is_replaced_while_the_server_answers(tiny_checkpoints,
                                                                                            client):
    with TestClient(create_app(tiny_settings(tiny_checkpoints, step_processes=1))) as test_client:
        stepping = test_client.get("/api/health").json()["stepping"]
        assert stepping["processes"] == 1 and stepping["ready"] in (0, 1)
        steppers = test_client.app.state.registry.jobs.steppers
        assert steppers.started(60)  # what the work ahead waits for
        assert test_client.get("/api/health").json()["stepping"] == {"processes": 1, "ready": 1}
        first = steppers._processes[0]
        os.kill(first.pid, signal.SIGKILL)
        deadline = time.monotonic() + 10
        while steppers.ready():
            assert time.monotonic() < deadline
            time.sleep(0.05)
        body = {"text": TEXT}
        want = lines(client.post("/api/compare", json=body))
        assert lines(test_client.post("/api/compare", json=body)) == want  # on the model thread meanwhile
        ready(test_client, 1)
        assert steppers._processes[0].pid != first.pid
        assert lines(test_client.post("/api/compare", json=body)) == want


def test_no_processes_when_the_settings_leave_it_to_the_model_thread(client, tiny_checkpoints):
    assert client.app.state.registry.jobs.steppers is None  # step_processes=0
    settings = tiny_settings(tiny_checkpoints, step_processes=None, batch_compares=False)
    with TestClient(create_app(settings)) as unbatched:
        assert unbatched.app.state.registry.jobs.steppers is None


def test_a_process_reports_its_figures_its_queue_and_the_queue_emptied():
    assert worth_reporting([("rnn", 2)], [], {}, {})
    assert worth_reporting([], [], {"1.2.3.4": 0.3}, {})
    assert worth_reporting([], [], {}, {"1.2.3.4": 0.3})  # emptied by a drop: said
    assert not worth_reporting([], [], {}, {})  # idle: nothing to say


@pytest.mark.slow
def test_a_process_killed_while_readers_type_fails_none_of_their_sentences(tiny_checkpoints):
    """Its sentences in flight are run again elsewhere (the other process, or the model thread), a
    new process is ready within 20 s, and every process ends with the server."""
    with TestClient(create_app(tiny_settings(tiny_checkpoints, step_processes=2))) as test_client:
        steppers = ready(test_client)
        answers, stop = [], time.monotonic() + 4.0

        def type_on(reader: int) -> None:
            key = 0
            while time.monotonic() < stop:
                key += 1
                text = f"{TEXTS[reader % len(TEXTS)]} {key}"  # a new text at every key, as a reader types
                answers.extend(lines(test_client.post("/api/compare", json={"text": text})))

        with ThreadPoolExecutor(6) as readers:
            typing = [readers.submit(type_on, reader) for reader in range(6)]
            time.sleep(1.0)
            killed = steppers._processes[0]
            os.kill(killed.pid, signal.SIGKILL)
            for done in typing:
                done.result()
        assert answers and not [a for a in answers if "error" in a], [a for a in answers if "error" in a][:3]
        deadline = time.monotonic() + 20
        while test_client.get("/api/health").json()["stepping"] != {"processes": 2, "ready": 2}:
            assert time.monotonic() < deadline, "no process took the killed one's place within 20 s"
            time.sleep(0.1)
        assert steppers._processes[0].pid != killed.pid and killed.poll() is not None  # reaped
        processes = list(steppers._processes)
    assert all(process.poll() is not None for process in processes)  # they end with the server
