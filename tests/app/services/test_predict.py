"""The predict service (the prediction chapter): top-k per step, a forced prefix, beam candidates and
tree; bad input."""

from __future__ import annotations

import pytest

from app.runtime.errors import InvalidOptionError, UnknownModelError
from app.services.inference import DecodeOptions
from app.services.predict import prediction
from app.services.translation import translation
from tests.app.answers import sent
from tests.app.conftest import TEXT

NAMES = ["transformer", "lstm-additive", "rnn"]


@pytest.mark.parametrize("name", NAMES)
def test_greedy_steps_match_translate(registry, name):
    answer = sent(prediction(registry, TEXT, name, top_k=3))
    plain = sent(translation(registry, name, TEXT, DecodeOptions(top_k=3)))
    assert answer["translation"] == plain["translation"] and answer["target_tokens"] == plain["target_tokens"]
    assert [{"token": s["token"], "top": s["top"]} for s in answer["steps"]] == plain["steps"]
    assert "tree" not in answer and "candidates" not in answer and answer["prefix"] == []
    for step in answer["steps"]:
        assert not step["forced"] and len(step["top"]) == 3
        probabilities = [t["probability"] for t in step["top"]]
        assert probabilities == sorted(probabilities, reverse=True)
        assert step["top"][0]["token"] == step["token"]
        assert step["probability"] == step["top"][0]["probability"]


def test_the_default_model_has_switches(registry):
    assert sent(prediction(registry, TEXT))["model"] == "transformer"


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("beam_size", [1, 3])
def test_a_forced_prefix_is_kept_verbatim(registry, name, beam_size):
    plain = sent(prediction(registry, TEXT, name))
    pieces = registry.tokenizer.pieces(range(20, 23))  # ordinary pieces, not the model's choice
    answer = sent(prediction(registry, TEXT, name, prefix=tuple(pieces), beam_size=beam_size))
    assert answer["target_tokens"][:3] == pieces and answer["prefix"] == pieces
    assert [s["forced"] for s in answer["steps"][:4]] == [True, True, True, False][: len(answer["steps"])]
    assert [s["token"] for s in answer["steps"][:3]] == pieces
    if beam_size > 1:
        assert all(c["tokens"][:3] == pieces for c in answer["candidates"])
        assert [[n["status"] for n in step] for step in answer["tree"][:3]] == [["forced"]] * 3
    own = tuple(plain["target_tokens"][:2])  # the greedy output's own start: the same translation
    assert sent(prediction(registry, TEXT, name, prefix=own))["target_tokens"] == plain["target_tokens"]


def test_beam_candidates_are_sorted_and_the_tree_leads_to_them(registry):
    answer = sent(prediction(registry, TEXT, "transformer", beam_size=4, top_k=2))
    scores = [c["score"] for c in answer["candidates"]]
    assert 1 <= len(scores) <= 4 and scores == sorted(scores, reverse=True)
    assert answer["translation"] == answer["candidates"][0]["translation"]
    tree = answer["tree"]
    ends = {n["rank"]: (s, i) for s, step in enumerate(tree) for i, n in enumerate(step)
            if n.get("rank") is not None}  # absent (None) where no candidate ends
    assert sorted(ends) == list(range(len(scores)))
    for rank, candidate in enumerate(answer["candidates"]):
        s, i = ends[rank]
        path = []
        while s >= 0:
            node = tree[s][i]
            path.append(node["token"])
            parent = node.get("parent")  # absent (None) at step 0
            assert parent is None if s == 0 else tree[s - 1][parent]["status"] == "kept"
            s, i = s - 1, parent
        assert path[::-1] == candidate["tokens"] + (["<eos>"] if candidate["finished"] else [])
    assert all(len(step) <= 8 for step in tree)
    assert sent(prediction(registry, TEXT, "transformer", beam_size=1))["translation"] == \
        sent(translation(registry, "transformer", TEXT))["translation"]


@pytest.mark.parametrize("prefix", [("not-a-piece",), ("<eos>",), ("<bos>",), ("<pad>",)])
def test_a_bad_prefix_is_refused(registry, prefix):
    with pytest.raises(InvalidOptionError) as error:
        sent(prediction(registry, TEXT, prefix=prefix))
    assert error.value.field == "prefix"


def test_a_prefix_longer_than_the_output_limit_is_refused(registry):
    piece = registry.tokenizer.pieces([20])[0]
    limit = registry.limits.max_target_tokens
    # longer than the usual limit: stretched
    answer = sent(prediction(registry, TEXT, "lstm", prefix=(piece,) * 40))
    assert answer["target_tokens"][:40] == [piece] * 40
    with pytest.raises(InvalidOptionError):
        sent(prediction(registry, TEXT, prefix=(piece,) * (limit + 1)))


def test_an_unknown_model_is_not_found(registry):
    with pytest.raises(UnknownModelError):
        sent(prediction(registry, TEXT, "nope"))


def test_bad_input(client):
    assert client.post("/api/predict", json={"text": TEXT}).status_code == 200
    answer = client.post("/api/predict", json={"text": TEXT, "beam_size": 3, "prefix": ["▁We"]})
    assert answer.status_code == 200 and answer.json()["target_tokens"][0] == "▁We"
    for body, field in [({"prefix": ["nope!"]}, "prefix"), ({"prefix": ["<eos>"]}, "prefix"),
                        ({"prefix": [""]}, "prefix"), ({"prefix": "▁I"}, "prefix"), ({"prefix": [3]}, "prefix"),
                        ({"prefix": ["."] * 129}, "prefix"), ({"top_k": 0}, "top_k"), ({"top_k": 11}, "top_k"),
                        ({"beam_size": 9}, "beam_size"), ({"beam_size": "2"}, "beam_size"),
                        ({"text": ""}, "text"), ({"model": 3}, "model")]:
        response = client.post("/api/predict", json={"text": TEXT, **body})
        assert response.status_code == 422, body
        assert response.json()["detail"][0]["loc"][:2] == ["body", field], body
    assert client.post("/api/predict", json={"text": TEXT, "model": "nope"}).status_code == 404
    assert client.post("/api/predict", json={}).status_code == 422
