"""Limits and headers: body size before parsing, short 422 echoes, security headers on every
response, HEAD on health, relative redirects, /docs behind a setting, slow request heads cut."""

from __future__ import annotations

import json
import socket
import threading
import time

import pytest
import uvicorn
from fastapi.testclient import TestClient

from app.guard import CSP
from app.main import ECHO_CHARS, create_app
from app.serving import H11
from tests.app.conftest import tiny_settings

TEXT = "Je mange du pain."


def test_a_body_over_the_limit_is_413_before_parsing(client):
    big = json.dumps({"text": "a" * 70_000}).encode()
    answer = client.post("/api/translate", content=big, headers={"Content-Type": "application/json"})
    assert answer.status_code == 413 and "65536" in answer.json()["detail"]
    assert answer.headers["content-security-policy"] == CSP


def test_a_chunked_body_over_the_limit_is_413_as_soon_as_it_adds_up(client):
    def chunks():
        for _ in range(100):  # 100 x 8 KiB, no Content-Length: the reader stops at 64 KiB
            yield b"x" * 8192

    answer = client.post("/api/translate", content=chunks(), headers={"Content-Type": "application/json"})
    assert answer.status_code == 413


def test_a_body_under_the_limit_still_works(client):
    answer = client.post("/api/translate", json={"text": TEXT, "model": "rnn", "pad": " " * 1000})
    assert answer.status_code in (200, 422)  # extra fields may be refused; never 413
    assert answer.status_code != 413


@pytest.mark.parametrize("body", [
    {"text": "x" * 30_000, "model": "rnn"},  # too long for the service
    {"text": 5, "model": "rnn"},
    {"text": TEXT, "model": "rnn", "beam_size": "x" * 30_000},
    {"text": TEXT, "model": "rnn", "heads_off": [{"kind": "y" * 30_000, "layer": 0, "head": 0}]},
])
def test_a_422_never_echoes_more_than_a_short_prefix(client, body):
    answer = client.post("/api/translate", json=body)
    assert answer.status_code == 422
    assert len(answer.content) < 2000, answer.text[:300]
    for error in answer.json()["detail"]:
        if "input" in error:
            written = error["input"] if isinstance(error["input"], str) else json.dumps(error["input"])
            assert len(written) <= ECHO_CHARS + 3


def test_security_headers_on_every_kind_of_response(client):
    for answer in (client.get("/"), client.get("/api/health"), client.get("/static/js/api.js"),
                   client.get("/vendor/plotly.min.js"), client.get("/api/nothing-here"),
                   client.post("/api/translate", json={"text": ""})):
        headers = answer.headers
        assert headers["content-security-policy"] == CSP, answer.url
        assert "unsafe-eval" not in headers["content-security-policy"]
        assert headers["x-content-type-options"] == "nosniff"
        assert headers["referrer-policy"] == "no-referrer"
    assert client.get("/api/health").headers["content-type"] == "application/json; charset=utf-8"
    compare = client.post("/api/compare", json={"text": TEXT, "models": ["rnn"]})
    assert compare.headers["content-type"] == "application/x-ndjson; charset=utf-8"


def test_head_on_health_is_200_without_a_body(client):
    answer = client.head("/api/health")
    assert answer.status_code == 200 and answer.content == b""


def test_redirects_do_not_copy_the_host_header(client):
    answer = client.get("/static", headers={"Host": "evil.example"}, follow_redirects=False)
    assert answer.status_code in (307, 308)
    location = answer.headers["location"]
    assert location.startswith("/") and not location.startswith("//") and "evil" not in location


def test_docs_are_served_only_when_switched_on(tiny_checkpoints):
    with TestClient(create_app(tiny_settings(tiny_checkpoints, models=("rnn",), docs=True))) as client:
        for path in ("/docs", "/redoc"):
            answer = client.get(path)
            assert answer.status_code == 200 and "cdn.jsdelivr.net" in answer.headers["content-security-policy"]


def _serve(app, header_timeout: float):
    class Quick(H11):
        pass

    Quick.header_timeout = header_timeout
    config = uvicorn.Config(app, host="127.0.0.1", port=0, http=Quick, log_level="warning", lifespan="off")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.01)
    port = server.servers[0].sockets[0].getsockname()[1]
    return server, thread, port


async def _hello(scope, receive, send):
    if scope["type"] != "http":
        return
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"2")]})
    await send({"type": "http.response.body", "body": b"ok"})


def test_a_slowly_sent_head_is_cut_off_while_a_prompt_one_is_served():
    server, thread, port = _serve(_hello, header_timeout=0.5)
    try:
        slow = socket.create_connection(("127.0.0.1", port))
        slow.settimeout(5)
        started = time.monotonic()
        slow.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n")  # never ends its headers
        for _ in range(3):
            time.sleep(0.1)
            slow.sendall(b"X-A: b\r\n")  # keeps trickling: the keep-alive timer alone never fires
        assert slow.recv(100) == b""  # closed by the server
        assert time.monotonic() - started < 3
        prompt = socket.create_connection(("127.0.0.1", port))
        prompt.settimeout(5)
        prompt.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        assert prompt.recv(1000).startswith(b"HTTP/1.1 200")
        prompt.close()
    finally:
        server.should_exit = True
        thread.join(5)
