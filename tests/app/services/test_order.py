"""The order service (the order chapter): the identity with positional encoding off, not on; bad input."""

from __future__ import annotations

from app.services.order import order
from tests.app.answers import sent
from tests.app.conftest import TEXT


def test_the_identity_holds_off_and_fails_on(registry):
    answer = sent(order(registry, TEXT, seed=1))
    assert sorted(answer["permutation"]) == list(range(len(answer["source_tokens"])))
    assert answer["shuffled_tokens"] == [answer["source_tokens"][i] for i in answer["permutation"]]
    assert answer["checks"]["pe_off"]["max_abs_difference"] < 1e-5
    assert answer["checks"]["pe_on"]["max_abs_difference"] > 1e-3
    off = answer["checks"]["pe_off"]
    assert len(off["original"]) == 4 and len(off["per_layer"]) == 2  # tiny: 4 heads, 2 layers
    table = answer["positional_encoding"]
    assert table["positions"] == len(answer["source_tokens"]) and table["dimensions"] == 32
    assert set(answer["translations"]["pe_on"]) == {"original", "shuffled"}


def test_a_given_permutation_and_bad_input(client):
    ok = client.post("/api/order", json={"text": TEXT, "permutation": [4, 3, 2, 1, 0], "max_position": 40})
    assert ok.status_code == 200, ok.text
    assert ok.json()["permutation"] == [4, 3, 2, 1, 0]
    assert len(ok.json()["positional_encoding"]["similarity"]) == 40
    for body, field in [({"permutation": [0, 1]}, "permutation"),
                        ({"permutation": [0, 0, 1, 2, 3]}, "permutation"),
                        ({"model": "lstm"}, "model"), ({"layer": 2}, "layer"), ({"seed": -1}, "seed"),
                        ({"max_position": 0}, "max_position")]:
        response = client.post("/api/order", json={"text": TEXT, **body})
        assert response.status_code == 422, body
        assert response.json()["detail"][0]["loc"][:2] == ["body", field], body
    assert client.post("/api/order", json={"text": TEXT, "model": "nope"}).status_code == 404
