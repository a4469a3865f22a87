"""Every endpoint and every model kind against the contract in docs/API.md."""

from __future__ import annotations

import pytest

from models.architectures import MODEL_NAMES
from tests.app.conftest import TEXT
from tests.app.contract import check_attention, check_translation
from tests.tiny import tiny_metrics


def test_health_lists_every_loaded_model(client):
    body = client.get("/api/health").json()
    dropped = body.pop("dropped")  # work superseded or abandoned so far: depends on the tests before
    assert set(dropped) == {"skipped", "stopped"}
    assert all(isinstance(n, int) and n >= 0 for n in dropped.values())
    assert body == {"status": "ok", "device": "cpu", "models": list(MODEL_NAMES), "unavailable": {},
                    "limits": {"max_chars": 500, "max_target_tokens": 128, "max_gradient_length": 200,
                               "max_beam_size": 8, "max_timing_length": 2000, "max_timing_lengths": 16},
                    "numerics": {"precision": "fp16-weights", "layout": "input-major"},
                    "stepping": {"processes": 0, "ready": 0},  # the app tests step on the model thread
                    "defaults": {"text": TEXT, "length": 80, "seed": 1, "top_k": 5},
                    "length_buckets": [{"bucket": "1-5", "min_words": 1, "max_words": 5},
                                       {"bucket": "6-10", "min_words": 6, "max_words": 10},
                                       {"bucket": "11-15", "min_words": 11, "max_words": 15},
                                       {"bucket": "16+", "min_words": 16, "max_words": None}],
                    # uvicorn's default trust (no FORWARDED_ALLOW_IPS in the tests' environment); no
                    # test sends X-Forwarded-For through this shared client
                    "clients": {"by": "address, IPv6 by /64", "trusted_proxies": ["127.0.0.1", "::1"],
                                "one_client_behind": None}}


def test_models_report_architecture_size_and_metrics(client):
    infos = {m["name"]: m for m in client.get("/api/models").json()}
    assert list(infos) == list(MODEL_NAMES)
    expected = {"rnn": ("rnn", None, 0), "lstm": ("lstm", None, 0), "lstm-additive": ("lstm", "additive", 1),
                "lstm-dot": ("lstm", "dot", 1), "transformer": ("transformer", "scaled-dot", 4)}
    for seed, (name, (architecture, attention, heads)) in enumerate(expected.items()):
        info = infos[name]
        assert (info["architecture"], info["attention"], info["heads"]) == (architecture, attention, heads)
        assert info["parameters"] > 0 and info["layers"] >= 1
        assert info["metrics"] == tiny_metrics(seed)
        assert info["curve_points"] == 3


def test_training_curves(client):
    curve = client.get("/api/models/lstm/curve").json()
    assert curve["model"] == "lstm" and [p["step"] for p in curve["points"]] == [1, 2, 3]
    assert [c["model"] for c in client.get("/api/curves").json()] == list(MODEL_NAMES)
    assert client.get("/api/models/nope/curve").status_code == 404


@pytest.mark.parametrize("name", MODEL_NAMES)
@pytest.mark.parametrize("beam_size", [1, 3])
def test_translate_every_model(client, name, beam_size):
    response = client.post("/api/translate", json={"text": TEXT, "model": name, "beam_size": beam_size})
    assert response.status_code == 200
    body = response.json()
    check_translation(body, name)
    assert body["source_tokens"] == ["▁Je", "▁mange", "▁du", "▁pain", "."]
    assert ("candidates" in body) == (beam_size > 1)


@pytest.mark.parametrize("name", MODEL_NAMES)
def test_attention_every_model(client, name):
    body = client.post("/api/attention", json={"text": TEXT, "model": name}).json()
    check_attention(body, name, layers=2, heads=4)
    # /api/translate takes a shorter path (no teacher-forced pass); the answer must be the same
    plain = client.post("/api/translate", json={"text": TEXT, "model": name}).json()
    assert {k: body[k] for k in plain} == plain


def test_top_k_steps_and_beam_candidates(client):
    body = client.post("/api/translate", json={"text": TEXT, "model": "transformer", "beam_size": 4,
                                               "top_k": 3}).json()
    steps = body["steps"]
    assert len(steps) in (len(body["target_tokens"]), len(body["target_tokens"]) + 1)
    assert [s["token"] for s in steps][: len(body["target_tokens"])] == body["target_tokens"]
    for step in steps:
        probabilities = [alt["probability"] for alt in step["top"]]
        assert len(probabilities) == 3 and probabilities == sorted(probabilities, reverse=True)
    candidates = body["candidates"]
    assert 1 <= len(candidates) <= 4 and candidates[0]["tokens"] == body["target_tokens"]
    assert [c["score"] for c in candidates] == sorted((c["score"] for c in candidates), reverse=True)


def test_transformer_switches_change_the_maps(client):
    plain = client.post("/api/attention", json={"text": TEXT, "model": "transformer"}).json()
    no_pe = client.post("/api/attention", json={"text": TEXT, "model": "transformer",
                                                "positional": False}).json()
    check_attention(no_pe, "transformer", layers=2, heads=4)
    assert no_pe["maps"][0]["weights"] != plain["maps"][0]["weights"]
    switches = {"heads_off": [{"kind": "cross", "layer": 1, "head": 2}], "positional": False}
    off = client.post("/api/translate", json={"text": TEXT, "model": "transformer", **switches})
    off_maps = client.post("/api/attention", json={"text": TEXT, "model": "transformer", **switches}).json()
    assert off.json()["target_tokens"] == off_maps["target_tokens"]


def test_gradients_rnn_and_lstm(client):
    body = client.post("/api/gradients", json={"text": TEXT, "length": 12}).json()
    assert len(body["tokens"]) == 12 and body["tokens"][:6] == ["▁Je", "▁mange", "▁du", "▁pain", ".", "▁Je"]
    assert "Frobenius" in body["definition"] and body["directions"] == 32
    assert [c["model"] for c in body["curves"]] == ["rnn", "lstm"]
    for curve in body["curves"]:
        assert curve["distance"] == list(range(12))
        assert len(curve["norm"]) == 12 and all(n >= 0 for n in curve["norm"]) and curve["norm"][0] > 0
    gates = body["gates"]
    assert gates["model"] == "lstm" and len(gates["units"]) == 32  # tiny LSTM: all 32 of fewer than 48
    for gate in ("input", "forget", "output"):
        assert len(gates[gate]) == 12 and all(len(row) == 32 for row in gates[gate])
        assert all(0 <= v <= 1 for row in gates[gate] for v in row)
        assert len(gates["mean"][gate]) == 12


def test_gradients_default_length_is_the_sentence(client):
    body = client.post("/api/gradients", json={"text": TEXT}).json()
    assert body["tokens"] == ["▁Je", "▁mange", "▁du", "▁pain", "."]
    short = client.post("/api/gradients", json={"text": TEXT, "length": 2}).json()
    assert short["tokens"] == ["▁Je", "▁mange"]


def test_gradients_of_chosen_models(client):
    body = client.post("/api/gradients", json={"text": TEXT, "models": ["lstm-dot"]}).json()
    assert [c["model"] for c in body["curves"]] == ["lstm-dot"] and body["gates"]["model"] == "lstm-dot"
    assert client.post("/api/gradients", json={"text": TEXT, "models": ["transformer"]}).status_code == 422
    assert client.post("/api/gradients", json={"text": TEXT, "models": ["gru"]}).status_code == 404


def test_openapi_documents_the_endpoints(client):
    paths = client.get("/openapi.json").json()["paths"]
    for path in ("/api/health", "/api/models", "/api/translate", "/api/attention", "/api/compare",
                 "/api/gradients"):
        assert path in paths
    assert client.get("/docs").status_code == 200  # on by default, served offline (tests/app/test_docs.py)
    assert client.get("/redoc").status_code == 200


def test_a_request_naming_no_model_gets_the_catalogues_default(client):
    """Chosen by capability: the first model whose heads can be switched (the Transformer here)."""
    for path in ("/api/translate", "/api/attention"):
        answer = client.post(path, json={"text": TEXT})
        assert answer.status_code == 200 and answer.json()["model"] == "transformer"
