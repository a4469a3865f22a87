"""The scaling service (the scaling chapter): which models apply, the curves, the per-head spreads, the JSON."""

from __future__ import annotations

import math

import pytest

from app.runtime.errors import InvalidOptionError
from app.services.scaling import D_KS, scaling
from tests.app.answers import sent
from tests.app.conftest import TEXT


def test_the_curves_and_the_heads(registry):
    answer = sent(scaling(registry, TEXT))
    assert answer["model"] == "transformer" and answer["d_k"] == 8  # tiny: d_model 32, 4 heads
    sampled = answer["sampled"]
    assert [p["d_k"] for p in sampled["scaled"]] == list(D_KS) == sampled["d_k"]
    unscaled, scaled = sampled["unscaled"], sampled["scaled"]
    assert unscaled[-1]["max_weight"] > 0.9 > scaled[-1]["max_weight"]
    assert unscaled[-1]["score_std"] == pytest.approx(32, rel=0.1)
    assert set(sampled["at_model_d_k"]) == {"scaled", "unscaled"}
    assert {(h["kind"], h["layer"], h["head"]) for h in answer["heads"]} == {
        (k, layer, head) for k in ("encoder", "decoder", "cross") for layer in range(2) for head in range(4)}
    for h in answer["heads"]:
        assert h["raw_std"] == pytest.approx(h["scaled_std"] * math.sqrt(8), rel=2e-3)
    assert set(answer["summary"]) == {"encoder", "decoder", "cross"}


def test_only_models_with_switches_and_d_k_in_range(registry, client):
    with pytest.raises(InvalidOptionError) as error:
        sent(scaling(registry, TEXT, "lstm"))
    assert error.value.field == "model"
    assert sent(scaling(registry, TEXT, d_ks=(64, 4)))["sampled"]["d_k"] == [4, 64]
    assert client.post("/api/scaling", json={"text": TEXT, "d_k": [16]}).status_code == 200
    for body, field in [({"model": "rnn"}, "model"), ({"d_k": [0]}, "d_k"), ({"d_k": []}, "d_k"),
                        ({"keys": 1}, "keys")]:
        response = client.post("/api/scaling", json={"text": TEXT, **body})
        assert response.status_code == 422, body
        assert response.json()["detail"][0]["loc"][:2] == ["body", field], body
    assert client.post("/api/scaling", json={"text": TEXT, "model": "nope"}).status_code == 404
