"""The attention-maps service: maps labelled with their tokens, switches, stopping early."""

from __future__ import annotations

import threading

import pytest
import torch

from app.services.inference import DecodeOptions
from app.services.maps import attention_maps
from models.decoding import Stopped
from tests.app.answers import sent
from tests.app.conftest import TEXT


def test_positional_switch_permutes_encoder_attention(registry):
    """The order chapter's claim on the tiny model: without positions, shuffling the words only permutes
    the encoder self-attention."""
    words = ["▁Le", "▁chat", "▁dort"]
    no_positions = DecodeOptions(positional=False)
    original = sent(attention_maps(registry, "transformer", "Le chat dort", no_positions, ("encoder",)))
    shuffled = sent(attention_maps(registry, "transformer", "dort Le chat", no_positions, ("encoder",)))
    assert original["source_tokens"] == words
    order = [shuffled["source_tokens"].index(w) for w in words]
    a = torch.tensor(original["maps"][0]["weights"])
    b = torch.tensor(shuffled["maps"][0]["weights"])[order][:, order]
    torch.testing.assert_close(a, b, atol=2e-4, rtol=1e-3)


def test_decoding_for_a_client_that_left_stops(cached_registry, monkeypatch):
    gone = threading.Event()
    steps = []
    model = cached_registry.get("transformer").model
    # what each decoder step calls: the recorded step where the model has one (models/serving/search.py)
    name = "graph" if getattr(model, "graph", None) is not None else "decode"
    real_step = getattr(model, name)

    def step_then_hang_up(*args, **kwargs):
        steps.append(1)
        gone.set()  # the client leaves during the first decoder step
        return real_step(*args, **kwargs)

    monkeypatch.setattr(model, name, step_then_hang_up)
    with pytest.raises(Stopped):
        sent(attention_maps(cached_registry, "transformer", TEXT, cancel=gone))
    assert len(steps) == 1 and len(cached_registry.jobs.cache) == 0


def test_only_the_kinds_asked_for_in_the_canonical_order(registry):
    answer = sent(attention_maps(registry, "transformer", TEXT, kinds=("cross", "decoder")))
    kinds = [m["kind"] for m in answer["maps"]]
    assert kinds == ["cross"] * 8 + ["decoder"] * 8  # 2 layers x 4 heads each
    cross = answer["maps"][0]
    assert cross["rows"] == answer["target_tokens"] and cross["cols"] == answer["source_tokens"]


def test_models_without_attention_have_no_maps(registry):
    assert sent(attention_maps(registry, "lstm", TEXT))["maps"] == []
