"""What the server says about its models without running them."""

from __future__ import annotations

from app.services.catalog import health, model_infos, training_curve
from tests.tiny import CURVE


def test_health_gives_the_limits_and_the_models(registry):
    body = health(registry)
    assert body["status"] == "ok" and body["models"] == registry.names
    assert body["limits"] == {"max_chars": 500, "max_target_tokens": 128, "max_gradient_length": 200}


def test_each_model_says_what_it_has_inside(registry):
    infos = {m["name"]: m for m in model_infos(registry)}
    assert [n for n, m in infos.items() if m["recurrent"]] == ["rnn", "lstm", "lstm-additive", "lstm-dot"]
    assert [n for n, m in infos.items() if m["cross_attention"]] == ["lstm-additive", "lstm-dot", "transformer"]
    assert [n for n, m in infos.items() if m["gates"]] == ["lstm", "lstm-additive", "lstm-dot"]
    assert [n for n, m in infos.items() if m["switches"]] == ["transformer"]
    assert infos["transformer"]["attention_kinds"] == ("cross", "encoder", "decoder")
    assert (infos["transformer"]["layers"], infos["transformer"]["heads"]) == (2, 4)
    assert all(m["summary"] and m["parameters"] > 0 for m in infos.values())


def test_training_curve(registry):
    assert training_curve(registry, "lstm") == {"model": "lstm", "points": CURVE}
