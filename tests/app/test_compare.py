"""POST /api/compare: every model on one text in one request, each answer as soon as it is ready."""

from __future__ import annotations

import json
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from app.services.compare import compare
from models.architectures import MODEL_NAMES
from tests.app.contract import check_attention

TEXT = "Je mange du pain."


def lines(response) -> list[dict]:
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("application/x-ndjson")
    assert response.headers["x-accel-buffering"] == "no"  # a proxy must not hold the lines back
    return [json.loads(line) for line in response.text.splitlines()]


def test_one_line_per_model_in_the_order_asked_each_the_attention_answer(client):
    order = ["transformer", "rnn", "lstm-dot"]
    answers = lines(client.post("/api/compare", json={"text": TEXT, "models": order}))
    assert [a["model"] for a in answers] == order
    for answer in answers:
        check_attention(answer, answer["model"], layers=2, heads=4)
        alone = client.post("/api/attention", json={"text": TEXT, "model": answer["model"]}).json()
        assert answer == alone


def test_every_loaded_model_by_default(client):
    answers = lines(client.post("/api/compare", json={"text": TEXT}))
    assert [a["model"] for a in answers] == list(MODEL_NAMES)


@pytest.mark.parametrize(("body", "status", "says"), [
    ({"text": TEXT, "models": ["rnn", "gpt"]}, 404, "unknown model 'gpt'"),
    ({"text": TEXT, "models": ["rnn", "rnn"]}, 422, "at most once"),
    ({"text": TEXT, "models": "rnn"}, 422, "models"),
    ({"text": "   "}, 422, "text"),
    ({"text": "x" * 501}, 422, "text"),
    ({"models": ["rnn"]}, 422, "text"),
])
def test_a_bad_request_is_refused_before_any_work(client, monkeypatch, body, status, says):
    submitted = []
    registry = client.app.state.registry
    monkeypatch.setattr(registry, "submit", lambda *args: submitted.append(args))
    response = client.post("/api/compare", json=body)
    assert response.status_code == status
    assert says in response.text
    assert submitted == []  # not even the valid models before the unknown one


def test_a_failing_model_gets_an_error_line_and_the_others_their_answers(client, monkeypatch):
    model = client.app.state.registry.get("lstm").model

    def broken(*args, **kwargs):
        raise RuntimeError("weights on fire")

    monkeypatch.setattr(model, "encode", broken)
    answers = lines(client.post("/api/compare", json={"text": TEXT, "models": ["rnn", "lstm", "transformer"]}))
    assert [a["model"] for a in answers] == ["rnn", "lstm", "transformer"]
    assert answers[1] == {"model": "lstm", "error": "RuntimeError: weights on fire"}
    assert answers[0]["translation"] is not None and answers[2]["maps"]


def test_answers_come_one_by_one_and_all_work_is_queued_at_once(cached_registry, monkeypatch):
    """The first answer is handed over while the next model still works; the next model's work
    is already queued on the model thread (no gap between models)."""
    release, queued = threading.Event(), []
    model = cached_registry.get("transformer").model
    real_encode = model.encode_with_internals

    def slow_encode(*args, **kwargs):
        release.wait(10)
        return real_encode(*args, **kwargs)

    monkeypatch.setattr(model, "encode_with_internals", slow_encode)
    worker = cached_registry.worker
    real_submit = worker.submit
    monkeypatch.setattr(worker, "submit", lambda *a, **k: queued.append(1) or real_submit(*a, **k))
    answers = compare(cached_registry, TEXT, ("lstm", "transformer"))
    assert len(queued) == 2  # both queued before the first answer is read
    assert next(answers)["model"] == "lstm"  # while the transformer waits
    release.set()
    assert next(answers)["model"] == "transformer"
    assert list(answers) == []


def test_when_the_client_has_gone_the_rest_is_not_computed(cached_registry, monkeypatch):
    release, gone, computed = threading.Event(), threading.Event(), []
    blocker = ThreadPoolExecutor(1).submit(cached_registry.worker.run, release.wait, 10)  # model thread busy
    model = cached_registry.get("lstm").model
    real_encode = model.encode
    monkeypatch.setattr(model, "encode", lambda *a, **k: computed.append(1) or real_encode(*a, **k))
    answers = compare(cached_registry, TEXT, ("lstm", "transformer"), cancel=gone)
    gone.set()  # the client hangs up while both models wait in the queue
    release.set()
    assert list(answers) == []  # the stream just ends: nobody is there to read it
    assert computed == [] and len(cached_registry.cache) == 0
    blocker.result(timeout=10)
