"""Many threads at once get exactly the answers of serial calls: nothing is shared between
requests, and the cache only ever returns what a fresh computation would."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

SENTENCES = ["Je mange du pain.", "Il fait beau aujourd'hui.", "Où est la gare ?", "Nous avons faim."]
CALLS = [(path, model, text)
         for path, model in [("/api/attention", "transformer"), ("/api/attention", "lstm-dot"),
                             ("/api/translate", "lstm-additive"), ("/api/translate", "rnn"),
                             ("/api/gradients", None)]
         for text in SENTENCES]


def _call(client, path, model, text):
    body = {"text": text} if model is None else {"text": text, "model": model}
    response = client.post(path, json=body)
    assert response.status_code == 200, response.text
    return response.json()


def test_threads_get_the_serial_answers(client):
    serial = [_call(client, *call) for call in CALLS]
    with ThreadPoolExecutor(max_workers=8) as pool:
        parallel = list(pool.map(lambda call: _call(client, *call), CALLS * 2))
    assert parallel == serial * 2


def test_beam_search_is_repeatable_under_threads(client):
    call = ("/api/translate", "transformer", SENTENCES[1])
    body = {"text": call[2], "model": call[1], "beam_size": 5, "top_k": 4}
    serial = client.post(call[0], json=body).json()
    with ThreadPoolExecutor(max_workers=6) as pool:
        answers = list(pool.map(lambda _: client.post(call[0], json=body).json(), range(12)))
    assert all(answer == serial for answer in answers)
