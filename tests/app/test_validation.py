"""Bad requests get 404 or 422 with a reason; no text, however hostile, gets a 500."""

from __future__ import annotations

import pytest

from models.architectures import MODEL_NAMES


def _locs(response) -> set[str]:
    return {".".join(str(p) for p in e["loc"][1:]) for e in response.json()["detail"]}


def test_unknown_model_is_404_listing_the_valid_names(client):
    for path in ("/api/translate", "/api/attention"):
        response = client.post(path, json={"text": "Bonjour.", "model": "gpt"})
        assert response.status_code == 404
        detail = response.json()["detail"]
        assert "gpt" in detail and all(name in detail for name in MODEL_NAMES)


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({}, "text"),
        ({"text": ""}, "text"),
        ({"text": "   \n\t "}, "text"),
        ({"text": "a" * 501}, "text"),
        ({"text": 42}, "text"),
        ({"text": None}, "text"),
        ({"text": ["Bonjour"]}, "text"),
        ({"text": "\u0000\u0001\u0007"}, "text"),  # normalises to nothing
        ({"text": "\ufdfa" * 30}, "text"),  # NFKC: 30 characters become 540
        ({"text": "Bonjour.", "beam_size": 0}, "beam_size"),
        ({"text": "Bonjour.", "beam_size": 9}, "beam_size"),
        ({"text": "Bonjour.", "beam_size": "3"}, "beam_size"),
        ({"text": "Bonjour.", "beam_size": 2.5}, "beam_size"),
        ({"text": "Bonjour.", "beam_size": True}, "beam_size"),
        ({"text": "Bonjour.", "model": 3}, "model"),
        ({"text": "Bonjour.", "top_k": 11}, "top_k"),
        ({"text": "Bonjour.", "model": "lstm", "positional": False}, "positional"),
        ({"text": "Bonjour.", "heads_off": [{"kind": "cross", "layer": 5, "head": 0}]}, "heads_off"),
        ({"text": "Bonjour.", "heads_off": [{"kind": "sideways", "layer": 0, "head": 0}]}, "heads_off.0.kind"),
    ],
)
def test_invalid_translate_bodies_are_422_naming_the_field(client, body, field):
    response = client.post("/api/translate", json=body)
    assert response.status_code == 422
    assert field in _locs(response)


@pytest.mark.parametrize("length", [0, 201, "10", 3.5])
def test_gradient_length_out_of_range_is_422(client, length):
    response = client.post("/api/gradients", json={"text": "Bonjour.", "length": length})
    assert response.status_code == 422 and "length" in _locs(response)


def test_a_model_named_twice_for_the_gradients_is_422_before_any_work(client):
    response = client.post("/api/gradients", json={"text": "Bonjour.", "models": ["rnn", "rnn"]})
    assert response.status_code == 422 and "models" in _locs(response)
    assert "at most once" in response.text


def test_malformed_json_is_422(client):
    response = client.post("/api/translate", content=b"{not json", headers={"Content-Type": "application/json"})
    assert response.status_code == 422


def test_exactly_500_characters_after_trimming_is_accepted(client):
    response = client.post("/api/translate", json={"text": "  " + "b" * 500 + "\n", "model": "rnn"})
    assert response.status_code == 200


HOSTILE = [
    "😀🙃🤖",
    "Je mange 🍞 avec du 🧀.",
    "\u202eélbat al ruS\u202c",  # right-to-left override
    "مرحبا بالعالم",
    "שלום עולם",
    "你好，世界",
    "a" * 500,
    "é" * 500,
    ". " * 250,
    "<script>alert('x')</script>",
    "<b>gras</b> &amp; &lt;",
    "'; DROP TABLE pairs; --",
    "{{ 7 * 7 }} {% raw %}",
    "Bonjour\u0000le\u0007monde",
    "tab\tnew\nline\r\nfin",
    "\ufeffzéro\u200blargeur",
    "e\u0301\u0301\u0301",  # stacked combining accents
    "\U0001f3f3\ufe0f\u200d\U0001f308",  # ZWJ sequence
    "\ud7ff\ue000\uffff",
    "«Guillemets» ‘courbes’ “anglais”",
    "1234567890 + 3.14 = ?",
    "x",
    ".",
    "<unk> <bos> <eos> <pad>",
    "\\n\\t\\u0000",
]


@pytest.mark.parametrize("text", HOSTILE)
def test_hostile_text_never_500s(short_client, text):
    calls = [("/api/attention", "transformer"), ("/api/attention", "lstm-additive"),
             ("/api/translate", "lstm"), ("/api/translate", "rnn")]
    for path, model in calls:
        response = short_client.post(path, json={"text": text, "model": model})
        assert response.status_code == 200, (path, model, response.text)
    response = short_client.post("/api/gradients", json={"text": text})
    assert response.status_code == 200
    response = short_client.post("/api/compare", json={"text": text})  # all five, streamed
    assert response.status_code == 200 and '"error"' not in response.text, response.text[:300]
    assert len(response.text.splitlines()) == 5


def test_longest_input_gets_every_map(short_client):
    """500 pieces: the encoder maps alone are 500 x 500 per head, and still valid."""
    body = short_client.post("/api/attention", json={"text": "a" * 500, "model": "transformer"}).json()
    encoder = [m for m in body["maps"] if m["kind"] == "encoder"]
    assert len(encoder) == 8 and len(encoder[0]["rows"]) == len(body["source_tokens"]) > 200
    assert abs(sum(encoder[0]["weights"][-1]) - 1) < 1e-3
    assert len(body["target_tokens"]) <= 12


@pytest.mark.parametrize("raw", [b'"a\\ud800b"', b'"\\udfff"', b'"\\udbff\\udfff"'])
def test_lone_surrogates_are_replaced_not_500(short_client, raw):
    """JSON escapes can name UTF-16 halves that are no character; they become U+FFFD (<unk>)."""
    for path in ("/api/translate", "/api/attention", "/api/gradients", "/api/compare"):
        model = b', "model": "transformer"' if path in ("/api/translate", "/api/attention") else b""
        body = b'{"text": ' + raw + model + b"}"  # an undeclared field would be 422
        response = short_client.post(path, content=body, headers={"Content-Type": "application/json"})
        assert response.status_code == 200, (path, response.text)


def test_all_unknown_pieces_still_translate(client):
    body = client.post("/api/attention", json={"text": "😀🙃", "model": "transformer"}).json()
    assert set(body["source_tokens"]) <= {"<unk>", "▁"}
    assert body["maps"]


def test_an_undeclared_field_is_422_naming_it(client):
    response = client.post("/api/compare", json={"text": "Bonjour.", "model": "gpt"})
    assert response.status_code == 422 and "model" in _locs(response)


def test_integral_floats_are_integers_and_other_numbers_are_not(client):
    ok = client.post("/api/translate", json={"text": "Bonjour.", "model": "rnn", "beam_size": 2.0})
    assert ok.status_code == 200
    for value in (2.5, "2", True):
        bad = client.post("/api/translate", json={"text": "Bonjour.", "model": "rnn", "beam_size": value})
        assert bad.status_code == 422, value
