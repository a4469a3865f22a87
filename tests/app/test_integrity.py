"""Damaged checkpoints are refused by name while the others serve; NaN never reaches a 500."""

from __future__ import annotations

import json

import pytest
import torch
from fastapi.testclient import TestClient

import app.services.maps
from app.main import create_app
from models import checkpoint
from tests.app.conftest import TEXT, tiny_settings
from tests.tiny import write_tiny_checkpoints

BODY = {"text": TEXT}


def _flip(path, count=4096):
    raw = bytearray(path.read_bytes())
    start = len(raw) // 2 - count // 2
    for i in range(start, start + count):
        raw[i] ^= 0xFF
    path.write_bytes(bytes(raw))


def test_a_tampered_checkpoint_is_refused_by_name_while_the_others_serve(tmp_path):
    folder = write_tiny_checkpoints(tmp_path / "checkpoints", names=("rnn", "lstm", "transformer"))
    weights = folder / "lstm" / checkpoint.WEIGHTS
    size = weights.stat().st_size
    _flip(weights, count=min(4096, size // 4))
    assert weights.stat().st_size == size
    with TestClient(create_app(tiny_settings(folder))) as client:
        health = client.get("/api/health").json()
        assert health["status"] == "ok" and health["models"] == ["rnn", "transformer"]
        reason = health["unavailable"]["lstm"]
        assert "lstm/model.safetensors" in reason and "sha256" in reason
        for model in ("rnn", "transformer"):
            assert client.post("/api/translate", json={**BODY, "model": model}).status_code == 200
        refused = client.post("/api/translate", json={**BODY, "model": "lstm"})
        assert refused.status_code == 404 and "sha256" in refused.json()["detail"]
        gradients = client.post("/api/gradients", json=BODY)
        assert gradients.status_code == 200 and [c["model"] for c in gradients.json()["curves"]] == ["rnn"]


def test_nan_weights_are_refused_at_load(tmp_path):
    folder = write_tiny_checkpoints(tmp_path / "checkpoints", names=("rnn", "transformer"))
    model = checkpoint.load(folder / "rnn")
    with torch.no_grad():
        for p in model.parameters():
            p.fill_(float("nan"))
    checkpoint.save(model, folder / "rnn", {"name": "rnn"})  # a matching sha256: only the values are wrong
    with TestClient(create_app(tiny_settings(folder))) as client:
        reason = client.get("/api/health").json()["unavailable"]["rnn"]
        assert "rnn/model.safetensors" in reason and "NaN" in reason
        for path, body in (("/api/translate", {**BODY, "model": "rnn"}),
                           ("/api/gradients", {**BODY, "models": ["rnn"]})):
            answer = client.post(path, json=body)
            assert answer.status_code == 404 and "NaN" in answer.json()["detail"]


@pytest.mark.parametrize("path, body", [
    ("/api/translate", {**BODY, "model": "rnn"}),
    ("/api/translate", {**BODY, "model": "rnn", "beam_size": 3, "top_k": 3}),
    ("/api/attention", {**BODY, "model": "lstm"}),
    ("/api/gradients", {**BODY, "models": ["rnn", "lstm"], "factors": True}),
    ("/api/recurrence", {**BODY, "model": "rnn"}),
    ("/api/predict", {**BODY, "model": "rnn"}),
])
def test_non_finite_outputs_never_reach_a_500(tmp_path, path, body):
    """Weights that turn NaN after loading (the check at load cannot see this): the answer is a
    clear error, never a 500 from a float conversion deep in a service."""
    folder = write_tiny_checkpoints(tmp_path / "checkpoints", names=("rnn", "lstm"))
    with TestClient(create_app(tiny_settings(folder, max_target_tokens=8))) as client:
        registry = client.app.state.registry
        for name in ("rnn", "lstm"):
            with torch.no_grad():
                for p in registry.get(name).model.parameters():
                    p.fill_(float("nan"))
        answer = client.post(path, json=body)
        assert answer.status_code != 500, answer.text
        if answer.status_code != 200:
            assert "non-finite" in answer.json()["detail"]


def test_nan_attention_weights_are_an_error_not_nulls(tmp_path, monkeypatch):
    """Attention maps that come out NaN (an overflow on some input): JSON has no NaN, and a null
    would read as a missing weight. /api/attention answers 503 and says why; compare gives that
    model an error line while the others answer."""
    maps_rounding = app.services.maps.round_sig
    monkeypatch.setattr(app.services.maps, "round_sig", lambda weights: maps_rounding(weights * float("nan")))
    folder = write_tiny_checkpoints(tmp_path / "checkpoints", names=("rnn", "lstm-additive"))
    with TestClient(create_app(tiny_settings(folder, max_target_tokens=8))) as client:
        answer = client.post("/api/attention", json={**BODY, "model": "lstm-additive"})
        assert answer.status_code == 503 and "non-finite" in answer.json()["detail"]
        lines = [json.loads(line) for line in client.post("/api/compare", json=BODY).text.splitlines()]
        by_model = {line["model"]: line for line in lines}
        assert "non-finite" in by_model["lstm-additive"]["error"]
        assert "error" not in by_model["rnn"] and by_model["rnn"]["source_tokens"]
