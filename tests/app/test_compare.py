"""POST /api/compare: every model on one text in one request, each answer as soon as it is ready."""

from __future__ import annotations

import json

import pytest
from fastapi.testclient import TestClient

from app.main import create_app
from models.architectures import MODEL_NAMES
from tests.app.conftest import TEXT, tiny_settings
from tests.app.contract import check_attention


def lines(response) -> list[dict]:
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("application/x-ndjson")
    assert response.headers["x-accel-buffering"] == "no"  # a proxy must not hold the lines back
    return [json.loads(line) for line in response.text.splitlines()]


def test_one_line_per_model_each_the_attention_answer(client):
    order = ["transformer", "rnn", "lstm-dot"]
    answers = lines(client.post("/api/compare", json={"text": TEXT, "models": order}))
    assert sorted(a["model"] for a in answers) == sorted(order)
    for answer in answers:
        check_attention(answer, answer["model"], layers=2, heads=4)
        alone = client.post("/api/attention", json={"text": TEXT, "model": answer["model"]}).json()
        assert answer == alone


def test_every_loaded_model_by_default(client):
    answers = lines(client.post("/api/compare", json={"text": TEXT}))
    assert sorted(a["model"] for a in answers) == sorted(MODEL_NAMES)


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
    monkeypatch.setattr(registry.jobs, "submit_together", lambda *args: submitted.append(args))
    response = client.post("/api/compare", json=body)
    assert response.status_code == status
    assert says in response.text
    assert submitted == []  # not even the valid models before the unknown one


def test_a_failing_model_gets_an_error_line_and_the_others_their_answers(client, monkeypatch):
    model = client.app.state.registry.get("lstm").model

    def broken(*args, **kwargs):
        raise RuntimeError("weights on fire")

    monkeypatch.setattr(model, "encode_with_internals", broken)
    answers = lines(client.post("/api/compare", json={"text": TEXT, "models": ["rnn", "lstm", "transformer"]}))
    answers = {a["model"]: a for a in answers}
    assert sorted(answers) == ["lstm", "rnn", "transformer"]
    assert answers["lstm"] == {"model": "lstm", "error": "RuntimeError: weights on fire"}
    assert answers["rnn"]["translation"] is not None and answers["transformer"]["maps"]


def test_the_first_model_done_is_the_first_line(client, monkeypatch):
    """Lines come in the order the models finish, not the order asked: a slow model asked first
    does not hold back the answer of a quick one (the page draws each as it arrives)."""
    import threading

    release = threading.Event()
    model = client.app.state.registry.get("transformer").model
    real_encode = model.encode_with_internals

    def slow_encode(*args, **kwargs):
        release.wait(10)
        return real_encode(*args, **kwargs)

    monkeypatch.setattr(model, "encode_with_internals", slow_encode)
    client.app.state.registry.jobs.cache.clear()
    body = {"text": TEXT, "models": ["transformer", "rnn"]}
    with client.stream("POST", "/api/compare", json=body) as response:
        got = response.iter_lines()
        assert json.loads(next(got))["model"] == "rnn"  # while the transformer still waits
        release.set()
        assert json.loads(next(got))["model"] == "transformer"


def test_a_lone_reader_stepped_gets_the_unbatched_answers(tiny_checkpoints, client):
    """ATTENTION_LAB_BATCH_COMPARES reaches the model thread; a compare with nothing stepped beside
    it is a pool of one sentence per model, so its lines are exactly what the server with batching
    off answers (each model's own search)."""
    with TestClient(create_app(tiny_settings(tiny_checkpoints, batch_compares=False))) as alone:
        assert not alone.app.state.registry.jobs.thread.batching
        assert client.app.state.registry.jobs.thread.batching  # the default
        body = {"text": TEXT, "models": ["transformer", "lstm-dot", "rnn"]}
        got = sorted(lines(alone.post("/api/compare", json=body)), key=lambda a: a["model"])
        assert got == sorted(lines(client.post("/api/compare", json=body)), key=lambda a: a["model"])
