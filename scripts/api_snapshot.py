"""Every endpoint's answer on a fixed set of requests, as one JSON file: run it before and after a
change that must not change behaviour, and compare the two files.

    .venv/bin/python scripts/api_snapshot.py /tmp/before.json
    ... change the code ...
    .venv/bin/python scripts/api_snapshot.py /tmp/after.json --compare /tmp/before.json

It talks to the app only through HTTP (FastAPI's TestClient, shipped checkpoints, cache off), so
it runs unchanged on both sides of a refactor. Numbers are compared within `TOLERANCE` of their
value, everything else exactly.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from fastapi.testclient import TestClient

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from app.config import Settings  # noqa: E402
from app.main import create_app  # noqa: E402

SENTENCES = [
    "Je mange du pain.",
    "Où est la gare ?",
    "Il pleut depuis ce matin, alors nous restons à la maison.",
    "Le chat noir dort sur le lit de ma sœur pendant que nous préparons le dîner pour nos amis.",
    "Nous avons un chat et un chat.",
]
MODELS = ["rnn", "lstm", "lstm-additive", "lstm-dot", "transformer"]
HEAD = {"kind": "cross", "layer": 0, "head": 1}


def requests() -> list[tuple[str, str, dict | None]]:
    """(method, path, body): successes on every model and sentence, then bad input of each kind."""
    out: list[tuple[str, str, dict | None]] = [("GET", "/api/models", None), ("GET", "/api/curves", None)]
    out += [("GET", f"/api/models/{m}/curve", None) for m in MODELS]
    for text in SENTENCES:
        for model in MODELS:
            out.append(("POST", "/api/translate", {"text": text, "model": model}))
            out.append(("POST", "/api/translate", {"text": text, "model": model, "beam_size": 4, "top_k": 3}))
            out.append(("POST", "/api/attention", {"text": text, "model": model}))
        out.append(("POST", "/api/compare", {"text": text}))
        out.append(("POST", "/api/gradients", {"text": text}))
        out.append(("POST", "/api/gradients", {"text": text, "length": 60}))
    text = SENTENCES[0]
    out += [
        ("POST", "/api/translate", {"text": text, "model": "transformer", "positional": False, "top_k": 2}),
        ("POST", "/api/attention",
         {"text": text, "model": "transformer", "heads_off": [HEAD], "kinds": ["cross"]}),
        ("POST", "/api/gradients", {"text": text, "length": 200, "models": ["lstm-dot"]}),
        # the gradients chapter's page request: both weights, with the per-step factors
        ("POST", "/api/gradients", {"text": text, "length": 80, "initialized": True, "factors": True}),
        ("POST", "/api/gradients", {"text": SENTENCES[2], "length": 30, "factors": True,
                                    "models": ["lstm-additive", "rnn"]}),
        ("POST", "/api/compare", {"text": text, "models": ["lstm", "rnn"]}),
        # bad input: the status codes (and messages) clients see
        ("POST", "/api/translate", {"text": "   ", "model": "rnn"}),
        ("POST", "/api/translate", {"text": "x" * 501, "model": "rnn"}),
        ("POST", "/api/translate", {"text": text, "model": "gpt"}),
        ("POST", "/api/translate", {"text": text, "model": "rnn", "beam_size": 9}),
        ("POST", "/api/translate", {"text": text, "model": "rnn", "positional": False}),
        ("POST", "/api/attention", {"text": text, "model": "transformer",
                                    "heads_off": [{"kind": "cross", "layer": 7, "head": 0}]}),
        ("POST", "/api/gradients", {"text": text, "length": 201}),
        ("POST", "/api/gradients", {"text": text, "models": ["transformer"]}),
        ("POST", "/api/compare", {"text": text, "models": ["rnn", "rnn"]}),
        ("POST", "/api/compare", {"text": "", "models": ["rnn"]}),
        ("GET", "/api/models/gpt/curve", None),
    ]
    return out


def answer(client: TestClient, method: str, path: str, body: dict | None):
    response = client.request(method, path, json=body)
    if response.headers.get("content-type", "").startswith("application/x-ndjson"):
        data = [json.loads(line) for line in response.text.splitlines() if line.strip()]
    else:
        data = response.json()
    return {"request": [method, path, body], "status": response.status_code, "body": data}


def comparable(answer: dict) -> dict:
    """`answer` as the contract defines it: POST /api/compare sends its lines in the order the models
    finish, which varies from run to run, so they are compared in model order."""
    if answer["request"][1] == "/api/compare" and isinstance(answer["body"], list):
        return {**answer, "body": sorted(answer["body"], key=lambda line: line.get("model", ""))}
    return answer


# Numbers agree when within this share of their value: a product summed in another order (readers'
# sentences stepped together, docs/SERVER.md "Fidelity") moves a weight in its last digits, and the
# page shows at most three significant digits. Everything else (pieces, translations, statuses) exactly.
TOLERANCE = 1e-3


def same(old, new) -> bool:
    """`old` and `new` equal, their floats within TOLERANCE of their value."""
    if isinstance(old, float) and isinstance(new, float | int):
        return abs(old - new) <= TOLERANCE * max(abs(old), abs(new)) or abs(old - new) < 1e-9
    if isinstance(old, dict) and isinstance(new, dict):
        return old.keys() == new.keys() and all(same(old[k], new[k]) for k in old)
    if isinstance(old, list) and isinstance(new, list):
        return len(old) == len(new) and all(same(a, b) for a, b in zip(old, new, strict=True))
    return old == new


def differences(before: list, after: list) -> list[str]:
    out = []
    for old, new in zip(before, after, strict=True):
        if not same(comparable(old), comparable(new)):
            out.append(f"{old['request'][0]} {old['request'][1]} {json.dumps(old['request'][2])[:80]}: "
                       f"{old['status']} -> {new['status']}")
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("output", type=Path)
    parser.add_argument("--compare", type=Path, help="an earlier snapshot: print what changed")
    args = parser.parse_args()
    with TestClient(create_app(Settings(device="cpu", cache_size=0))) as client:
        snapshot = {"health": client.get("/api/health").json(),
                    "answers": [answer(client, *r) for r in requests()]}
    args.output.write_text(json.dumps(snapshot, ensure_ascii=False, indent=1))
    print(f"{len(snapshot['answers'])} answers -> {args.output}")
    if args.compare:
        before = json.loads(args.compare.read_text())
        changed = differences(before["answers"], snapshot["answers"])
        if before["health"] != snapshot["health"]:
            changed.insert(0, "GET /api/health")
        print(f"{len(changed)} of {len(snapshot['answers'])} answers differ")
        for line in changed:
            print("  " + line)
        return 1 if changed else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
