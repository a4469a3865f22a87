"""The next-token service (the prediction chapter): one label per position, each loss the probe's, a reference
scored instead of the model's own translation, bad input a 4xx."""

from __future__ import annotations

import math

import pytest

from app.runtime.errors import InvalidOptionError
from app.services.next_token import next_token
from models.probes.next_token import position_losses
from tests.app.answers import sent
from tests.app.conftest import TEXT


def test_the_losses_of_the_models_own_translation(registry):
    answer = sent(next_token(registry, TEXT))
    assert answer["model"] == "transformer" and answer["target"] == "translation"
    assert answer["labels"] == [*answer["target_tokens"], "<eos>"]  # <eos> is the last label
    assert len(answer["losses"]) == len(answer["labels"])
    assert all(loss >= 0 for loss in answer["losses"])
    assert answer["mean_loss"] == pytest.approx(sum(answer["losses"]) / len(answer["losses"]), rel=1e-3)
    entry = registry.get("transformer")
    source = registry.source(TEXT)
    ids = registry.tokenizer.encode(answer["translation"])
    if registry.tokenizer.pieces(ids) == answer["target_tokens"]:
        probe = position_losses(entry.model, source.ids, ids)
        assert answer["losses"] == pytest.approx(probe.losses.tolist(), rel=1e-3, abs=1e-6)


def test_a_reference_is_scored_instead_and_any_model_may_score_it(registry):
    answer = sent(next_token(registry, TEXT, "lstm", reference="I eat bread."))
    assert answer["target"] == "reference" and answer["model"] == "lstm"
    pieces = registry.tokenizer.pieces(registry.tokenizer.encode("I eat bread."))
    assert answer["labels"] == [*pieces, "<eos>"]
    assert all(math.isfinite(loss) for loss in answer["losses"])


def test_bad_input_is_a_4xx_naming_the_field(registry, client):
    with pytest.raises(InvalidOptionError) as error:
        next_token(registry, TEXT, reference="I " * 400)
    assert error.value.field == "reference"
    assert client.post("/api/next-token", json={"text": TEXT, "reference": "I eat bread."}).status_code == 200
    for body, status in [({"reference": ""}, 422), ({"reference": "I " * 400}, 422), ({"model": "nope"}, 404),
                         ({"text": ""}, 422), ({"extra": 1}, 422)]:
        response = client.post("/api/next-token", json={"text": TEXT, **body})
        assert response.status_code == status, (body, response.text)


def test_a_refused_reference_says_its_kind_of_problem_for_a_client_to_word(registry, client):
    """The 422's `type` and `ctx` say what is wrong with the reference, so the page can phrase the
    refusal in its own language; `msg` stays the server's English."""
    limit = registry.limits.max_target_tokens
    cases = [("I " * 400, "string_too_long", {"max_length": 500}),
             ("a " * (limit + 10), "too_long", {"max_length": limit}),
             ("   ", "too_short", {"min_length": 1, "actual_length": 0})]
    for reference, kind, ctx in cases:
        response = client.post("/api/next-token", json={"text": TEXT, "reference": reference})
        assert response.status_code == 422, response.text
        [problem] = response.json()["detail"]
        assert problem["loc"] == ["body", "reference"] and problem["type"] == kind, problem
        assert ctx.items() <= problem["ctx"].items(), problem
    many = client.post("/api/next-token", json={"text": TEXT, "reference": "a " * (limit + 10)}).json()
    assert many["detail"][0]["ctx"]["actual_length"] > limit
