"""POST /api/teach and GET /api/teach: the contract, bad input refused naming its field (before any
work), the served models untouched during and after a run (their weights and another reader's
answers, bit for bit), the client's share charged as a run starts, and the spare process."""

from __future__ import annotations

import json

import pytest
from fastapi.testclient import TestClient
from pydantic import TypeAdapter

from app.main import create_app
from app.schemas.teach import TeachDone, TeachLine
from models import checkpoint
from models.teach_config import TEACHABLE, TeachLimits
from tests.app.conftest import tiny_settings

PAIR = {"text": "Je mange du pain.", "target": "I eat bread."}
LINE = TypeAdapter(TeachLine)


def lines_of(client, body) -> list[dict]:
    with client.stream("POST", "/api/teach", json=body) as response:
        assert response.status_code == 200, response.read()
        assert response.headers["content-type"].startswith("application/x-ndjson")
        return [json.loads(line) for line in response.iter_lines() if line]


def test_the_experiment_describes_itself(client):
    info = client.get("/api/teach").json()
    assert info["models"] == [m for m in client.app.state.registry.names if m in TEACHABLE]
    assert info["defaults"]["model"] == "lstm-additive" and info["defaults"]["steps"] == 30
    assert info["limits"]["max_steps"] == TeachLimits.max_steps and info["held_out"] == 3
    assert info["rehearsal_pairs"] == 4 and info["running"] == 0


@pytest.mark.parametrize(("body", "field", "kind"), [
    ({"target": ""}, "target", "string_too_short"),
    ({"target": " \t "}, "target", "string_too_short"),
    ({"target": "x" * 201}, "target", "string_too_long"),
    ({"model": "gru"}, "model", "value_error"),
    ({"steps": 0}, "steps", "greater_than_equal"),
    ({"steps": 101}, "steps", "less_than_equal"),
    ({"text": "   "}, "text", "value_error"),
    ({"text": "x" * 501}, "text", "value_error"),
    ({"rehearsal": "yes"}, "rehearsal", "bool_type"),
])
def test_bad_input_is_refused_naming_the_field(client, body, field, kind):
    response = client.post("/api/teach", json={**PAIR, **body})
    assert response.status_code == 422, response.text
    [error] = response.json()["detail"]
    assert error["loc"] == ["body", field] and error["type"] == kind
    assert client.get("/api/teach").json()["running"] == 0  # nothing was started


def test_a_run_streams_its_start_a_line_per_step_its_end_then_done_and_leaves_the_served_models_as_they_were(
        client):
    registry = client.app.state.registry
    digests = {name: checkpoint.weights_digest(entry.model) for name, entry in registry.models.items()}
    asked = {"text": "Le chat dort.", "model": "lstm-additive"}
    answer = client.post("/api/translate", json=asked).json()
    during = []
    with client.stream("POST", "/api/teach", json={**PAIR, "steps": 4, "rehearsal": True}) as response:
        lines = []
        for line in response.iter_lines():
            if line:
                lines.append(json.loads(line))
                LINE.validate_json(line) if "done" not in lines[-1] else TeachDone.model_validate_json(line)
            if len(lines) == 2:  # mid-run: another reader's answer, the served weights
                during.append(client.post("/api/translate", json=asked).json())
                during.append({n: checkpoint.weights_digest(e.model) for n, e in registry.models.items()})
    start, *steps, end, done = lines
    assert start["start"]["model"] == "lstm-additive" and start["start"]["before"]["pairs"] == 3
    assert [s["step"] for s in steps] == [1, 2, 3, 4] and all(s["rehearsal_loss"] is not None for s in steps)
    assert "translation" in steps[0]["reading"] and end["end"]["after"]["pairs"] == 3
    assert done["done"] is True and done["process"]["exit"] == 0 and "error" not in done
    assert during == [answer, digests]
    assert client.post("/api/translate", json=asked).json() == answer
    assert {n: checkpoint.weights_digest(e.model) for n, e in registry.models.items()} == digests
    assert client.get("/api/teach").json()["running"] == 0


def test_a_run_is_charged_to_the_client_s_share_as_it_starts(tiny_checkpoints):
    settings = tiny_settings(tiny_checkpoints, shares=True, share_teach="1/10 minutes")
    with TestClient(create_app(settings)) as client:
        assert client.post("/api/teach", json={**PAIR, "steps": 0}).status_code == 422  # refused: free
        lines_of(client, {**PAIR, "steps": 1})
        refused = client.post("/api/teach", json={**PAIR, "steps": 1})
        assert refused.status_code == 429 and refused.json()["share"] == "teach"
        assert refused.headers["RateLimit-Policy"] == '"teach";q=1;w=600'


def test_the_spare_process_started_by_opening_the_experiment_runs_the_next_run_and_ends_with_the_server(
        tiny_checkpoints):
    with TestClient(create_app(tiny_settings(tiny_checkpoints, teach_spare=True))) as client:
        teach = client.app.state.teach

        async def started() -> None:
            if teach.warming is not None:
                await teach.warming

        client.get("/api/teach")
        client.portal.call(started)
        spare = teach.spare
        assert spare is not None and spare.returncode is None
        lines = lines_of(client, {**PAIR, "steps": 1, "model": "transformer"})
        assert lines[-1]["process"]["exit"] == 0 and spare.returncode == 0  # the spare ran it
        client.portal.call(started)
        second = teach.spare
        assert second is not None and second is not spare  # and another waits for the next
    assert second.returncode is not None  # gone with the server
