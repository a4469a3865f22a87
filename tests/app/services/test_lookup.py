"""The one line's service: rows that sum to 1, a mix of values equal to the head's own output, the
JSON, and bad input refused with 422."""

from __future__ import annotations

import math

import pytest

from app.runtime.errors import InvalidOptionError
from app.services.lookup import lookup
from tests.app.answers import sent
from tests.app.conftest import TEXT


def test_the_rows_sum_to_one_and_the_mix_is_the_head_s_output(registry):
    answer = sent(lookup(registry, TEXT, head=1))
    S = len(answer["source_tokens"])
    assert answer["model"] == "transformer" and answer["head"] == 1 and answer["heads"] == 4
    assert answer["d_k"] == 8 == answer["d_model"] // answer["heads"]  # tiny: d_model 32, 4 heads
    assert answer["shapes"] == {"Q": [S, 8], "K": [S, 8], "V": [S, 8]}
    assert len(answer["scores"]) == len(answer["weights"]) == S
    for scores, weights in zip(answer["scores"], answer["weights"], strict=True):
        assert len(weights) == S and sum(weights) == pytest.approx(1, abs=1e-3)
        exp = [math.exp(s - max(scores)) for s in scores]
        assert weights == pytest.approx([e / sum(exp) for e in exp], abs=2e-3)  # the rows' own softmax
    assert answer["output_scale"] > 0.01
    assert answer["max_abs_difference"] < 1e-5 * max(1, answer["output_scale"])
    assert answer["weights_difference"] < 1e-5
    assert sent(lookup(registry, TEXT))["weights"] != answer["weights"]  # another head, another lookup


def test_bad_input_is_a_422(registry, client):
    with pytest.raises(InvalidOptionError) as error:
        lookup(registry, TEXT, head=4)
    assert error.value.field == "head"
    assert client.post("/api/lookup", json={"text": TEXT, "head": 3}).status_code == 200
    for body, field in [({"head": 4}, "head"), ({"head": -1}, "head"), ({"head": "one"}, "head"),
                        ({"model": "lstm"}, "model"), ({"text": ""}, "text")]:
        response = client.post("/api/lookup", json={"text": TEXT, **body})
        assert response.status_code == 422, body
        assert response.json()["detail"][0]["loc"][:2] == ["body", field], body
    assert client.post("/api/lookup", json={"text": TEXT, "model": "nope"}).status_code == 404
