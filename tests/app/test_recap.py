"""POST /api/recap (the recap's rows measured on a sentence) and the answers computed ahead at
start-up (app/services/ahead.py), on the tiny models."""

from __future__ import annotations

import re
import threading

from fastapi.testclient import TestClient

from app import chapters, defaults
from app.main import create_app
from app.runtime.loading import load_registry
from app.services import ahead, recap
from app.services.language import LANGUAGES, Words
from tests.app.conftest import TEXT, tiny_settings
from tests.app.contract import assert_recap_is_the_chapters

fmt = Words("en").figure  # the recap's English, as the page writes its numbers


def test_the_recap_has_a_measured_number_for_every_chapter_of_the_sentence(client):
    answer = client.post("/api/recap", json={"text": TEXT}).json()
    assert set(answer) == {"rows"}  # the text is not echoed
    main = [row["chapter"] for row in answer["rows"] if row["part"] is None]
    assert main == [slug for slug, part in recap.MEASURES if not part]
    # the attention chapter's one line and the prediction chapter's free labels have rows of their own,
    # after their chapter's main measurement
    assert [(row["chapter"], row["part"]) for row in answer["rows"] if row["part"]] == [
        ("attention", "lookup"), ("prediction", "labels")]
    order = [c.slug for c in chapters.CHAPTERS]
    assert [row["chapter"] for row in answer["rows"]] == sorted((row["chapter"] for row in answer["rows"]),
                                                                   key=order.index)
    for row in answer["rows"]:
        assert re.search(r"\d", row["text"]), row


def test_each_row_is_the_number_its_chapter_measures(client):
    rows = {r["chapter"]: r["text"] for r in client.post("/api/recap", json={"text": TEXT}).json()["rows"]}
    recurrence = client.post("/api/recurrence", json={"text": TEXT}).json()
    most = max(range(len(recurrence["change"])), key=recurrence["change"].__getitem__)
    assert f"= {fmt(recurrence['change'][most])})" in rows["recurrence"]
    order = client.post("/api/order", json={"text": TEXT, "seed": 1}).json()
    assert f"on, by {fmt(order['checks']['pe_on']['max_abs_difference'])}." in rows["order"]
    pieces = len(recurrence["tokens"])
    assert f"{pieces} steps one after another" in rows["parallel"]


def test_every_number_in_the_recap_is_the_chapters_own(client):
    assert_recap_is_the_chapters(client, TEXT)


def test_the_recap_refuses_what_the_chapters_refuse(client):
    assert client.post("/api/recap", json={"text": "  "}).status_code == 422
    assert client.post("/api/recap", json={"text": TEXT, "other": 1}).status_code == 422


def test_every_row_comes_in_every_language_of_the_page(client):
    rows = client.post("/api/recap", json={"text": TEXT}).json()["rows"]
    for row in rows:
        assert set(row["said"]) == set(LANGUAGES) and row["said"]["en"] == row["text"], row
        french = row["said"]["fr"]
        assert french != row["text"] and not re.search(r"\d\.\d", french), row  # 0,50: a decimal comma
    steps = next(r for r in rows if r["chapter"] == "parallel")["said"]["fr"]
    assert "jetons de votre phrase" in steps and "couches" in steps, steps
    one_line = next(r for r in rows if r["part"] == "lookup")["said"]["fr"]
    assert one_line.startswith("tête 1 de la première couche de l’encodeur du "), one_line
    assert " près " in one_line, one_line


def test_the_first_visit_is_every_chapter_in_reading_order(tiny_checkpoints):
    with load_registry(tiny_checkpoints, device="cpu", cache_size=0) as registry:
        asks = ahead.first_visit(registry)
    paths = [ask.path for ask in asks]
    order = [route.path for route in chapters.routes()]
    assert paths == sorted(paths, key=order.index)  # the first screen's, then chapter by chapter
    assert paths[0] == "/api/compare" and paths[-1] == "/api/recap"
    # every route a service declares a first-visit request for is asked, and is one the app serves
    assert set(paths) == set(ahead.page_requests()) <= set(create_app().openapi()["paths"])
    assert paths.count("/api/scores") == 2 and paths.count("/api/translate") == 4  # per model, per switch


def test_a_first_visit_finds_every_answer_computed_ahead(tiny_checkpoints):
    """The app computes the default sentence's answers at start-up; then the page's own requests
    for them, over HTTP, are all answered from the cache: the model thread runs nothing."""
    with TestClient(create_app(tiny_settings(tiny_checkpoints, cache_size=64))) as client:
        work = client.app.state.ahead
        work.join(timeout=120)
        asks = ahead.first_visit(client.app.state.registry)
        assert work.answered == len(asks)
        worker = client.app.state.registry.jobs.thread
        ran = []

        def watched(name):
            original = getattr(worker, name)
            return lambda *args, **kwargs: ran.append(name) or original(*args, **kwargs)

        worker.submit, worker.run_together = watched("submit"), watched("run_together")
        for ask in asks:
            response = client.post(ask.path, json=ask.body)
            assert response.status_code == 200, (ask.path, response.text)
            assert not ran, f"{ask.path} {ask.body} was computed again: not the cache key ahead used"


def test_the_page_defaults_are_served(client):
    health = client.get("/api/health").json()
    assert health["defaults"] == {"text": defaults.TEXT, "seed": defaults.SEED, "top_k": defaults.TOP_K,
                                  "length": defaults.length(health["limits"]["max_gradient_length"])}


def test_no_answer_is_computed_ahead_without_a_cache(tiny_checkpoints):
    with load_registry(tiny_checkpoints, device="cpu", cache_size=0) as registry:
        assert ahead.start(registry) is None


def test_stopping_ahead_ends_it_without_a_failure(tiny_checkpoints, caplog):
    with load_registry(tiny_checkpoints, device="cpu", cache_size=64) as registry:
        stopped = threading.Event()
        stopped.set()
        assert ahead.answer_all(registry, ahead.first_visit(registry), stopped) == 0
    assert "failed" not in caplog.text


def test_the_work_ahead_waits_for_the_stepper_processes_to_load(tiny_checkpoints):
    """Loading, the stepper processes take the cores: the default sentence's answers are computed
    only once they are ready (or given up on), so the readers who come first share the cores with
    their loading alone."""
    with load_registry(tiny_checkpoints, device="cpu", cache_size=64) as registry:
        happened = []

        class Loading:  # the stepper processes, as the work ahead meets them
            def started(self, timeout):
                happened.append(("started", timeout))
                return True

            def step_together(self, spec, cancel=None):
                return None  # none ready: stepped on the model thread

            def ages(self):
                return {}

            def close(self):
                pass

        registry.jobs.steppers = Loading()
        worker = registry.jobs.thread
        submit, run_together = worker.submit, worker.run_together
        worker.submit = lambda *a, **k: happened.append("model work") or submit(*a, **k)
        worker.run_together = lambda *a, **k: happened.append("model work") or run_together(*a, **k)
        work = ahead.start(registry)
        work.join(timeout=120)
        assert work.answered == len(ahead.first_visit(registry)) > 0
        assert happened[0] == ("started", ahead.STEPPERS_WAIT_S) and "model work" in happened[1:]
