"""A fresh server's first requests, all at once: run in a new interpreter, so that nothing torch
sets up on first use has been set up by an earlier test.

    python -m tests.app.first_requests CHECKPOINTS

Starts the app on CHECKPOINTS (its lifespan included), then counts every call of `ast.parse`
(TorchScript, torch._dynamo and inspect parse source on their first use; two threads parsing at once
can fail on CPython 3.11) while every endpoint that differentiates, traces or records a graph is
asked at once from its own thread. Prints one JSON object: each request's status and the count.
"""

from __future__ import annotations

import ast
import json
import sys
import threading
from pathlib import Path

from fastapi.testclient import TestClient

from app.config import Settings
from app.defaults import TEXT
from app.main import create_app

HEAD = {"kind": "cross", "layer": 0, "head": 1}
REQUESTS = [
    ("/api/gradients", {"text": TEXT, "length": 40, "initialized": True, "factors": True}),
    ("/api/gradients", {"text": TEXT}),
    ("/api/long-lag/gradients", {"lag": 10}),
    ("/api/long-lag/gradients", {"lag": 10, "filler": "noise"}),
    ("/api/recurrence", {"text": TEXT}),
    ("/api/compare", {"text": TEXT}),
    ("/api/attention", {"text": TEXT, "model": "transformer"}),
    ("/api/translate", {"text": TEXT, "model": "transformer", "beam_size": 3}),
    ("/api/scores", {"text": TEXT}),
    ("/api/scaling", {"text": TEXT}),
    ("/api/order", {"text": TEXT}),
    ("/api/heads", {"text": TEXT, "model": "transformer", "heads_off": [HEAD]}),
    ("/api/predict", {"text": TEXT, "model": "transformer", "beam_size": 3}),
    ("/api/snapshots", {"text": TEXT, "model": "transformer", "step": 0}),
    ("/api/snapshots", {"text": TEXT, "model": "transformer", "step": 1}),
    ("/api/snapshots", {"text": TEXT, "model": "lstm-additive", "step": 0}),
    ("/api/timing", {"lengths": [4, 8]}),
]


def main(checkpoints: Path) -> None:
    # in this interpreter: the stepper processes and the spare teaching process parse in their own
    settings = Settings(checkpoints=checkpoints, device="cpu", cache_size=0, queue_limit=len(REQUESTS) + 8,
                        step_processes=0, teach_spare=False)
    parses = []
    parse = ast.parse

    def counted(*args, **kwargs):
        parses.append(threading.current_thread().name)
        return parse(*args, **kwargs)

    with TestClient(create_app(settings)) as client:
        ast.parse = counted  # from here on, only requests run
        statuses: list[tuple[str, int]] = []
        start = threading.Barrier(len(REQUESTS))

        def ask(path: str, body: dict) -> None:
            start.wait()
            statuses.append((path, client.post(path, json=body).status_code))

        threads = [threading.Thread(target=ask, args=r) for r in REQUESTS]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        ast.parse = parse
    print(json.dumps({"statuses": statuses, "parses": len(parses)}))


if __name__ == "__main__":
    main(Path(sys.argv[1]))
