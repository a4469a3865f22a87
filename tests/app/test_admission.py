"""Admission control: with the model thread busy and the queue full, health, the catalog and static
files answer at once and one more model request is 503 with Retry-After; a request counts only once
its body is read, so bodies trickled over many connections keep nobody else out."""

from __future__ import annotations

import contextlib
import json
import select
import socket
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import httpx
import uvicorn
from fastapi.testclient import TestClient

from app.admission import Admission
from app.guard import CSP
from app.main import create_app
from app.serving import H11
from tests.app.conftest import TEXT, tiny_settings

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
        blocker = app.state.registry.jobs.thread.submit(release.wait, 30)  # the model thread is busy
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
            assert "busy" in refused.json()["detail"] and refused.headers["content-security-policy"] == CSP
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
        blocker = app.state.registry.jobs.thread.submit(release.wait, 30)
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
        blocker = app.state.registry.jobs.thread.submit(release.wait, 30)
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


TRICKLERS = 2 * LIMIT  # connections trickling a body: more than the count bound
BODY_TIMEOUT = 2.0  # seconds each has for its whole body
SLACK = 1.5  # seconds a loaded machine may take past it to answer


def test_bodies_trickled_over_more_connections_than_the_bound_keep_nobody_else_out(tiny_checkpoints):
    """A model request counts against the bound only once its whole body is read: more connections
    than the bound, each sending a POST's head and then its body a byte at a time, leave it empty,
    so an ordinary request meanwhile is answered 200, not 503; each trickled one is answered 408 and
    closed body_timeout after its head (with the security headers), never sooner or much later."""
    app = create_app(tiny_settings(tiny_checkpoints, queue_limit=LIMIT, body_timeout=BODY_TIMEOUT))
    body = json.dumps({"text": TEXT, "model": "rnn"}).encode()
    head = (b"POST /api/translate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            b"Content-Length: %d\r\n\r\n" % len(body))
    with _served(app) as (heads, port), ThreadPoolExecutor(TRICKLERS) as pool:
        began = time.monotonic()
        tricklers = [pool.submit(_trickle, port, head, body) for _ in range(TRICKLERS)]
        _until(lambda: len(heads) == TRICKLERS)  # every head read and handed to the app
        answer = httpx.post(f"http://127.0.0.1:{port}/api/translate", json={"text": TEXT, "model": "rnn"},
                            timeout=10)
        assert answer.status_code == 200, answer.text
        # not counted: only the ordinary request was, until just after its answer
        _until(lambda: _admission(app).in_flight == 0, seconds=0.5)
        assert time.monotonic() - began < BODY_TIMEOUT  # while every trickled body still hung
        for trickler in tricklers:
            reply, seconds = trickler.result(timeout=BODY_TIMEOUT + SLACK + 5)
            assert reply.startswith(b"HTTP/1.1 408"), reply[:200]
            assert b"connection: close" in reply.lower() and CSP.encode() in reply
            assert BODY_TIMEOUT <= seconds < BODY_TIMEOUT + SLACK, seconds
        assert _admission(app).in_flight == 0
        assert httpx.post(f"http://127.0.0.1:{port}/api/translate", json={"text": "Encore.", "model": "rnn"},
                          timeout=10).status_code == 200


def _trickle(port: int, head: bytes, body: bytes) -> tuple[bytes, float]:
    """Send a request's head and the start of its body, then one more byte every 0.2 s (never the
    last) until the server answers: its answer, whole once the server closes the connection, and the
    seconds from the head to then. The bytes stop 0.4 s before the deadline: one arriving as the
    server closes would be answered with a reset, which drops the 408 before it is read."""
    with socket.create_connection(("127.0.0.1", port)) as connection:
        connection.settimeout(BODY_TIMEOUT + SLACK + 3)
        began = time.monotonic()
        connection.sendall(head + body[:3])
        sent = 3
        while not select.select([connection], [], [], 0.2)[0]:  # nothing from the server yet
            assert time.monotonic() - began < BODY_TIMEOUT + SLACK + 3, "never answered"
            if sent < len(body) - 1 and time.monotonic() - began < BODY_TIMEOUT - 0.4:
                connection.sendall(body[sent:sent + 1])
                sent += 1
        reply = b""
        while chunk := connection.recv(4096):
            reply += chunk
        return reply, time.monotonic() - began


@contextlib.contextmanager
def _served(app) -> Iterator[tuple[list, int]]:
    """`app` (its lifespan run) on a real uvicorn server in a thread, as `make serve` runs it: the
    requests handed to the app so far (their scopes, each added as its head is read) and the port."""
    heads: list = []

    async def counted(scope, receive, send):
        if scope["type"] == "http":
            heads.append(scope)
        await app(scope, receive, send)

    config = uvicorn.Config(counted, host="127.0.0.1", port=0, http=H11, log_level="warning")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        _until(lambda: server.started, seconds=60)
        yield heads, server.servers[0].sockets[0].getsockname()[1]
    finally:
        server.should_exit = True
        thread.join(10)


def _until(condition, seconds: float = 10) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline
        time.sleep(0.01)
