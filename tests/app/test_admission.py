"""Admission control: with the model thread busy and the queue full, health, the catalog and static
files answer at once and one more model request is 503 with Retry-After."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor

from fastapi.testclient import TestClient

from app.admission import Admission
from app.main import create_app
from tests.app.conftest import tiny_settings

LIMIT = 3


def _admission(app) -> Admission:
    layer = app.middleware_stack
    while not isinstance(layer, Admission):
        layer = layer.app
    return layer


def test_health_answers_at_once_while_the_queue_is_full_and_more_model_work_is_503(tiny_checkpoints):
    app = create_app(tiny_settings(tiny_checkpoints, queue_limit=LIMIT))
    with TestClient(app) as client, ThreadPoolExecutor(LIMIT) as pool:
        release = threading.Event()
        blocker = app.state.registry.jobs.worker.submit(release.wait, 30)  # the model thread is busy
        waiting = [pool.submit(client.post, "/api/translate", json={"text": f"Bonjour {i}.", "model": "rnn"})
                   for i in range(LIMIT)]
        admission = _admission(app)
        deadline = time.monotonic() + 10
        while admission.in_flight < LIMIT:
            assert time.monotonic() < deadline
            time.sleep(0.01)
        try:
            worst = 0.0
            for path in ("/api/health", "/api/models", "/api/curves", "/static/js/api.js", "/"):
                started = time.monotonic()
                answer = client.get(path)
                worst = max(worst, time.monotonic() - started)
                assert answer.status_code == 200, path
            assert worst < 1.0, f"worst {worst:.3f} s"
            started = time.monotonic()
            refused = client.post("/api/translate", json={"text": "Encore.", "model": "rnn"})
            assert time.monotonic() - started < 1.0
            assert refused.status_code == 503 and refused.headers["retry-after"] == "1"
            assert "busy" in refused.json()["detail"]
        finally:
            release.set()
        blocker.result(timeout=10)
        assert [w.result(timeout=30).status_code for w in waiting] == [200] * LIMIT
        assert admission.in_flight == 0
        assert client.post("/api/translate", json={"text": "Encore.", "model": "rnn"}).status_code == 200


def test_a_compare_superseded_while_it_waits_gives_its_place_back_at_once(tiny_checkpoints):
    """A reader's newer text (same X-Supersede-Key) ends the older compare as it arrives, though the
    older one's work is still queued behind a busy model thread: its admission slot is free again."""
    app = create_app(tiny_settings(tiny_checkpoints, queue_limit=LIMIT))
    key = {"X-Supersede-Key": "reader-1"}
    with TestClient(app) as client, ThreadPoolExecutor(2) as pool:
        release = threading.Event()
        blocker = app.state.registry.jobs.worker.submit(release.wait, 30)
        admission = _admission(app)
        try:
            older = pool.submit(client.post, "/api/compare", json={"text": "Je mange."}, headers=key)
            _until(lambda: admission.in_flight == 1)
            newer = pool.submit(client.post, "/api/compare", json={"text": "Je mange du pain."}, headers=key)
            assert older.result(timeout=5).text == ""  # ended before any model's turn came
            _until(lambda: admission.in_flight == 1)  # only the newer one is left
        finally:
            release.set()
        blocker.result(timeout=10)
        lines = newer.result(timeout=30).text.splitlines()
        assert len(lines) == len(app.state.registry.names)
        assert admission.in_flight == 0


def test_a_request_is_refused_when_the_work_it_would_wait_behind_has_waited_too_long(tiny_checkpoints):
    """Admission by the queue's age, not the count: many requests in flight are admitted while the
    model thread keeps up; once the oldest queued work has waited past max_wait, the next is 503."""
    app = create_app(tiny_settings(tiny_checkpoints, queue_limit=64, max_wait=0.3))
    with TestClient(app) as client, ThreadPoolExecutor(8) as pool:
        release = threading.Event()
        blocker = app.state.registry.jobs.worker.submit(release.wait, 30)
        try:
            waiting = [pool.submit(client.post, "/api/translate", json={"text": f"Salut {i}.", "model": "rnn"})
                       for i in range(8)]
            admission = _admission(app)
            _until(lambda: admission.in_flight == 8)  # eight in flight, well under the count: admitted
            time.sleep(0.4)  # the oldest has now waited past max_wait
            refused = client.post("/api/translate", json={"text": "Encore.", "model": "rnn"})
            assert refused.status_code == 503 and refused.headers["retry-after"] == "1"
            assert "waited more than 0.3 s" in refused.json()["detail"]
            assert client.get("/api/health").status_code == 200
        finally:
            release.set()
        blocker.result(timeout=10)
        assert [w.result(timeout=30).status_code for w in waiting] == [200] * 8
        assert client.post("/api/translate", json={"text": "Encore.", "model": "rnn"}).status_code == 200


def _until(condition, seconds: float = 10) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline
        time.sleep(0.01)
