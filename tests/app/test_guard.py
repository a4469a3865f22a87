"""Limits and headers: body size before parsing, short 422 echoes, security headers on every
response (500s included), HEAD on health, relative redirects, /docs's own policy, slow request
heads and bodies cut."""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import threading
import time

import pytest
import uvicorn
from fastapi.testclient import TestClient

from app.guard import CSP, DOCS_CSP, BodyLimit, SecurityHeaders
from app.main import ECHO_CHARS, create_app
from app.serving import H11
from tests.app.conftest import TEXT, tiny_settings


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


def test_an_unhandled_error_is_a_json_500_with_the_headers_and_no_traceback(tiny_checkpoints, caplog):
    app = create_app(tiny_settings(tiny_checkpoints, models=("rnn",)))

    @app.post("/api/broken")
    def broken() -> dict:
        raise RuntimeError("secret detail from deep inside")

    with TestClient(app, raise_server_exceptions=False) as client:
        answer = client.post("/api/broken")
    assert answer.status_code == 500
    assert answer.headers["content-security-policy"] == CSP
    assert answer.headers["x-content-type-options"] == "nosniff"
    assert answer.headers["content-type"] == "application/json; charset=utf-8"
    assert answer.json() == {"detail": "internal error (RuntimeError); please report it"}
    assert "secret" not in answer.text and "Traceback" not in answer.text
    assert "unexpected error on POST /api/broken" in caplog.text  # the app's handler still logs it


def test_head_on_health_is_200_without_a_body(client):
    answer = client.head("/api/health")
    assert answer.status_code == 200 and answer.content == b""


def test_redirects_do_not_copy_the_host_header(client):
    answer = client.get("/static", headers={"Host": "evil.example"}, follow_redirects=False)
    assert answer.status_code in (307, 308)
    location = answer.headers["location"]
    assert location.startswith("/") and not location.startswith("//") and "evil" not in location


def test_docs_pages_get_their_own_policy_and_no_cdn(tiny_checkpoints):
    with TestClient(create_app(tiny_settings(tiny_checkpoints, models=("rnn",)))) as client:
        for path in ("/docs", "/redoc"):
            answer = client.get(path)
            policy = answer.headers["content-security-policy"]
            assert answer.status_code == 200 and policy == DOCS_CSP
            assert "http" not in policy and "unsafe-inline" not in policy.split("script-src")[1].split(";")[0]


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
        assert _prompt_answer(port, b"GET / HTTP/1.1\r\nHost: x\r\n\r\n").startswith(b"HTTP/1.1 200")
    finally:
        server.should_exit = True
        thread.join(5)


async def _echo(scope, receive, send):
    """The size of the body it was handed."""
    if scope["type"] != "http":
        return
    message = await receive()
    body = str(len(message.get("body", b""))).encode()
    headers = [(b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def _prompt_answer(port: int, request: bytes) -> bytes:
    """The start of the answer to `request` sent whole at once on a new connection."""
    with socket.create_connection(("127.0.0.1", port)) as prompt:
        prompt.settimeout(5)
        prompt.sendall(request)
        return prompt.recv(1000)


def _read_all(connection: socket.socket) -> bytes:
    answer = b""
    while chunk := connection.recv(4096):
        answer += chunk
    return answer


@pytest.mark.parametrize("trickle", [True, False], ids=["trickled", "stopped"])
def test_a_slowly_sent_body_is_408_and_its_connection_closed(trickle):
    app = SecurityHeaders(BodyLimit(_echo, max_bytes=65536, timeout=0.5))
    server, thread, port = _serve(app, header_timeout=5)
    try:
        slow = socket.create_connection(("127.0.0.1", port))
        slow.settimeout(5)
        started = time.monotonic()
        slow.sendall(b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{")
        if trickle:
            for _ in range(8):  # a byte every 0.1 s: each arrives in time, the whole body does not
                time.sleep(0.1)
                with contextlib.suppress(OSError):
                    slow.sendall(b" ")
        answer = _read_all(slow)  # ends when the server closes the connection
        assert answer.startswith(b"HTTP/1.1 408"), answer[:200]
        assert b"connection: close" in answer.lower() and CSP.encode() in answer
        assert time.monotonic() - started < 3
        request = b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\n12345"
        assert _prompt_answer(port, request).startswith(b"HTTP/1.1 200")
    finally:
        server.should_exit = True
        thread.join(5)


def test_a_client_gone_before_its_body_is_whole_is_not_answered():
    """A reader's page aborts a request as they type on, sometimes before its body has all been sent:
    nobody is left to answer, so neither a 400 for the cut-off JSON (which the request log would
    count as the client's fault) nor the route runs; the log records it as gone (499)."""
    called, sent = [], []

    async def app(scope, receive, send):
        called.append(scope)

    messages = iter([{"type": "http.request", "body": b'{"text": "Je ma', "more_body": True},
                     {"type": "http.disconnect"}])

    async def receive():
        return next(messages)

    async def send(message):
        sent.append(message)

    scope = {"type": "http", "method": "POST", "path": "/api/compare",
             "headers": [(b"content-length", b"60"), (b"content-type", b"application/json")]}
    asyncio.run(BodyLimit(app, max_bytes=65536)(scope, receive, send))
    assert (called, sent) == ([], [])
