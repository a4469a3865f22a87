"""The heads service (the heads chapter): contributions, silenced heads, ranking, rollout, effect; bad input."""

from __future__ import annotations

import pytest

from app.services.heads import heads
from tests.app.answers import sent
from tests.app.conftest import TEXT


def test_contributions_ranking_and_rollout(registry):
    answer = sent(heads(registry, TEXT))
    assert answer["model"] == "transformer" and "effect" not in answer
    assert len(answer["contributions"]) == 3 * 2 * 4 and not any(h["off"] for h in answer["contributions"])
    alignment = answer["alignment"]
    if alignment is not None:  # a random tiny model may stop at once
        assert alignment["reference"] == "lstm-additive" and len(alignment["ranking"]) == 2 * 4
        scores = [r["score"] for r in alignment["ranking"]]
        assert scores == sorted(scores, reverse=True) and all(0 <= s <= 1 for s in scores)
    for layer in answer["rollout"]:
        for row in layer:
            assert sum(row) == pytest.approx(1, abs=1e-3)


def test_a_silenced_head_adds_nothing_and_its_effect_is_scored(registry):
    answer = sent(heads(registry, TEXT, heads_off=(("cross", 1, 2), ("encoder", 0, 1))))
    off = [h for h in answer["contributions"] if h["off"]]
    assert {(h["kind"], h["layer"], h["head"]) for h in off} == {("cross", 1, 2), ("encoder", 0, 1)}
    assert all(n == 0 for h in off for n in h["norms"])
    effect = answer["effect"]
    assert effect["changed"]["translation"] == answer["translation"]
    for side in effect.values():
        assert side["log_prob_all_heads"] <= 0 and side["log_prob_heads_off"] <= 0


def test_bad_input(client):
    assert client.post("/api/heads", json={"text": TEXT}).status_code == 200
    for body, field in [({"model": "lstm"}, "model"), ({"reference": "lstm"}, "reference"),
                        ({"reference": "transformer"}, "reference"),
                        ({"heads_off": [{"kind": "cross", "layer": 9, "head": 0}]}, "heads_off"),
                        ({"heads_off": [{"kind": "x", "layer": 0, "head": 0}]}, "heads_off")]:
        response = client.post("/api/heads", json={"text": TEXT, **body})
        assert response.status_code == 422, body
        assert response.json()["detail"][0]["loc"][:2] == ["body", field], body
    assert client.post("/api/heads", json={"text": TEXT, "model": "nope"}).status_code == 404
