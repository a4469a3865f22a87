"""The scores service: which models apply, the row, the temperature, the JSON."""

from __future__ import annotations

import math

import pytest
import torch

from app.runtime.errors import InvalidOptionError, UnknownModelError
from app.runtime.loading import load_registry
from app.services.maps import attention_maps
from app.services.scores import UNITS, attention_scores
from tests.app.answers import sent
from tests.app.conftest import TEXT


def test_recurrent_models_with_attention_apply(registry):
    assert attention_scores(registry, TEXT).model == "lstm-additive"
    assert attention_scores(registry, TEXT, "lstm-dot").model == "lstm-dot"
    for name in ("lstm", "transformer"):
        with pytest.raises(InvalidOptionError, match=f"{name}' is not a recurrent model with") as error:
            attention_scores(registry, TEXT, name)
        assert error.value.field == "model"


def test_without_a_recurrent_model_with_attention_there_is_nothing_to_score(tiny_checkpoints):
    registry = load_registry(tiny_checkpoints, ("lstm", "transformer"), device="cpu", cache_size=0)
    try:
        with pytest.raises(UnknownModelError, match="^no recurrent model with attention is loaded; loaded: "):
            attention_scores(registry, TEXT)
    finally:
        registry.close()


@pytest.mark.parametrize("name", ["lstm-additive", "lstm-dot"])
def test_the_weights_are_the_softmax_of_the_scores_and_the_cross_map_s_row(registry, name):
    cross = sent(attention_maps(registry, name, TEXT))["maps"][0]
    for row in range(min(3, len(cross["rows"]))):
        answer = sent(attention_scores(registry, TEXT, name, row))
        assert answer["target_tokens"] == cross["rows"] and answer["source_tokens"] == cross["cols"]
        assert answer["query_token"] == cross["rows"][row]
        assert answer["weights"] == cross["weights"][row]  # the same numbers, the same rounding
        softmax = torch.softmax(torch.tensor(answer["scores"], dtype=torch.float64), -1)
        torch.testing.assert_close(softmax, torch.tensor(answer["weights"], dtype=torch.float64),
                                   rtol=0, atol=2e-3)  # scores kept to 4 digits
        assert answer["reweighted"] == answer["weights"]  # T = 1
        assert answer["reweighted_entropy"] == answer["entropy"]
        assert answer["entropy_unit"] == "nats" and answer["max_entropy"] == pytest.approx(math.log(5), 1e-3)


def test_the_blend_is_the_weighted_sum_of_the_states(registry):
    answer = sent(attention_scores(registry, TEXT, "lstm-dot", 0))
    blend = answer["blend"]
    assert len(blend["units"]) == min(UNITS, blend["hidden_size"]) and blend["units"] == sorted(blend["units"])
    weights, states = torch.tensor(answer["weights"]), torch.tensor(blend["states"])  # (S,), (S, units)
    torch.testing.assert_close(weights @ states, torch.tensor(blend["context"]), rtol=0, atol=2e-3)
    assert len(blend["state_norms"]) == len(answer["source_tokens"]) and blend["context_norm"] > 0
    assert answer["formula"] == "e_j = s . h_j" and answer["attention"] == "dot"
    additive = sent(attention_scores(registry, TEXT, "lstm-additive", 0))
    assert additive["formula"] == "e_j = v^T tanh(W s + U h_j)"


def test_temperature_reweights(registry):
    cold = sent(attention_scores(registry, TEXT, "lstm-additive", 0, temperature=0.05))
    hot = sent(attention_scores(registry, TEXT, "lstm-additive", 0, temperature=20))
    assert cold["weights"] == hot["weights"]  # the model's own do not move
    assert cold["reweighted_max_weight"] >= cold["max_weight"] >= hot["reweighted_max_weight"]
    assert hot["reweighted_entropy"] <= hot["max_entropy"]


def test_the_endpoint_refuses_a_bad_row_a_model_without_attention_and_a_bad_temperature(client):
    ok = client.post("/api/scores", json={"text": TEXT})
    assert ok.status_code == 200 and ok.json()["model"] == "lstm-additive"
    pieces = len(ok.json()["target_tokens"])
    for body, field in [({"row": pieces}, "row"), ({"row": -1}, "row"), ({"model": "lstm"}, "model"),
                        ({"model": "transformer"}, "model"), ({"temperature": 0}, "temperature"),
                        ({"temperature": 1000}, "temperature"), ({"temperature": "hot"}, "temperature")]:
        response = client.post("/api/scores", json={"text": TEXT, **body})
        assert response.status_code == 422, body
        assert response.json()["detail"][0]["loc"] == ["body", field], body
    assert "row must be 0 to" in client.post("/api/scores", json={"text": TEXT, "row": pieces}).text
    assert client.post("/api/scores", json={"text": TEXT, "model": "nope"}).status_code == 404
