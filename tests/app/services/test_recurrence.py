"""The recurrence service: which model reads, the units shown, the JSON."""

from __future__ import annotations

import pytest
import torch

from app.runtime.errors import InvalidOptionError, UnknownModelError
from app.services.recurrence import UNITS, recurrence, recurrent_model
from models.probes.recurrence import read
from tests.app.answers import sent
from tests.app.conftest import TEXT


def test_the_default_is_the_plain_rnn_and_any_recurrent_model_is_allowed(registry):
    assert recurrent_model(registry, None).name == "rnn"
    assert recurrent_model(registry, "lstm-dot").name == "lstm-dot"
    with pytest.raises(InvalidOptionError, match="transformer") as error:
        recurrent_model(registry, "transformer")
    assert error.value.field == "model"
    with pytest.raises(UnknownModelError):
        recurrent_model(registry, "nope")


def test_without_a_plain_rnn_the_first_recurrent_model_reads(cached_registry):
    assert recurrent_model(cached_registry, None).name == "lstm"  # loaded: lstm, transformer


@pytest.mark.parametrize("name", ["rnn", "lstm"])
def test_states_are_the_encoder_s_for_the_units_shown(registry, name):
    answer = sent(recurrence(registry, TEXT, name))
    source = registry.source(TEXT)
    states = read(registry.get(name).model, source.ids).states
    assert answer["model"] == name and answer["tokens"] == source.pieces
    assert answer["hidden_size"] == states.size(1) and len(answer["units"]) == min(UNITS, states.size(1))
    assert answer["units"] == sorted(answer["units"]) and str(UNITS) in answer["rule"]
    assert len(answer["states"]) == len(source.ids)
    assert all(len(row) == len(answer["units"]) for row in answer["states"])
    torch.testing.assert_close(torch.tensor(answer["states"]), states[:, answer["units"]], rtol=1e-3, atol=1e-6)
    before = torch.cat([torch.zeros(1, states.size(1)), states[:-1]])
    change = (states - before).norm(dim=-1)
    torch.testing.assert_close(torch.tensor(answer["change"]), change, rtol=1e-3, atol=0)
    torch.testing.assert_close(torch.tensor(answer["norm"]), states.norm(dim=-1), rtol=1e-3, atol=0)
    assert answer["equation"].startswith("h_t = tanh" if name == "rnn" else "c_t = f_t")


def test_the_endpoint_answers_and_refuses(client):
    body = client.post("/api/recurrence", json={"text": TEXT}).json()
    assert body["model"] == "rnn" and len(body["change"]) == len(body["tokens"])
    refused = client.post("/api/recurrence", json={"text": TEXT, "model": "transformer"})
    assert refused.status_code == 422 and refused.json()["detail"][0]["loc"] == ["body", "model"]
    assert client.post("/api/recurrence", json={"text": TEXT, "model": "nope"}).status_code == 404
    assert client.post("/api/recurrence", json={"text": " "}).status_code == 422
