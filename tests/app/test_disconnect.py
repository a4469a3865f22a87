"""A client that hangs up gets no work done for it: queued work is skipped, decoding stops."""

from __future__ import annotations

import asyncio

import pytest
from fastapi import FastAPI

from app.dependencies import ClientGone
from app.disconnect import CancelOnDisconnect
from app.runtime.errors import Abandoned
from models.decoding import Stopped


def _app(seen: list) -> FastAPI:
    """/wait blocks until its client hangs up (or 5 s); /quick answers at once. Both record
    what their ClientGone flag said."""
    app = FastAPI()
    app.add_middleware(CancelOnDisconnect)

    @app.post("/wait")
    def wait(body: dict, gone: ClientGone) -> dict:
        seen.append(gone.wait(5))
        return {}

    @app.post("/quick")
    def quick(body: dict, gone: ClientGone) -> dict:
        seen.append(gone.is_set())
        return {"ok": True}

    return app


def _scope(path: str, headers: list[tuple[bytes, bytes]] = ()) -> dict:
    """An HTTP POST's ASGI scope, with JSON content and `headers` added."""
    return {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST",
            "scheme": "http", "path": path, "raw_path": path.encode(), "query_string": b"",
            "headers": [(b"content-type", b"application/json"), (b"host", b"test"), *headers],
            "client": ("127.0.0.1", 1), "server": ("127.0.0.1", 80), "root_path": ""}


async def _call(app, path: str, hang_up_after: float | None = None, key: bytes | None = None,
                hang_up: asyncio.Event | None = None) -> list[dict]:
    """Drive the ASGI app by hand: the request body (with an X-Supersede-Key `key`), then the
    client hangs up after `hang_up_after` seconds or once `hang_up` is set (or never)."""
    queue: asyncio.Queue = asyncio.Queue()
    queue.put_nowait({"type": "http.request", "body": b"{}", "more_body": False})
    sent: list[dict] = []

    async def send(message):
        sent.append(message)

    async def leave():
        await (hang_up.wait() if hang_up is not None else asyncio.sleep(hang_up_after))
        queue.put_nowait({"type": "http.disconnect"})

    scope = _scope(path, [] if key is None else [(b"x-supersede-key", key)])
    leaving = None if hang_up_after is None and hang_up is None else asyncio.create_task(leave())
    try:
        await asyncio.wait_for(app(scope, queue.get, send), timeout=10)
    finally:
        if leaving is not None:
            leaving.cancel()
    return sent


def test_the_middleware_tells_the_handler_its_client_hung_up():
    seen: list = []
    asyncio.run(_call(_app(seen), "/wait", hang_up_after=0.05))
    assert seen == [True]


def test_a_client_that_stays_is_not_flagged():
    seen: list = []
    sent = asyncio.run(_call(_app(seen), "/quick"))
    assert seen == [False]
    assert sent[0]["status"] == 200


@pytest.mark.parametrize("error", [Abandoned(), Stopped()])
def test_work_dropped_for_a_client_that_left_is_not_a_server_error(client, monkeypatch, error):
    def dropped():  # what the model thread raises for such work
        raise error

    def job(*args, **kwargs):
        return ("dropped", type(error).__name__), dropped

    monkeypatch.setattr("app.routes.maps.attention_maps_job", job)
    response = client.post("/api/attention", json={"text": "Je mange.", "model": "transformer"})
    assert response.status_code == 499  # nobody reads it: the client has gone


def test_a_newer_request_with_the_same_key_stops_the_older_one_at_once():
    """The older request's flag is set as the newer one arrives, while the older client is still
    connected; other keys and requests without one are left alone, and nothing is kept afterwards."""
    seen: list = []
    app = _app(seen)

    async def scenario():
        release = asyncio.Event()
        older = asyncio.create_task(_call(app, "/wait", key=b"visit-1", hang_up=release))
        other = asyncio.create_task(_call(app, "/wait", key=b"visit-2", hang_up=release))
        plain = asyncio.create_task(_call(app, "/wait", hang_up=release))
        await asyncio.sleep(0.2)  # all three wait for their flag
        await _call(app, "/quick", key=b"visit-1")  # replaces the older visit-1 request
        await asyncio.wait_for(older, timeout=2)  # stopped at once, not after its 5 s
        assert not other.done() and not plain.done()
        release.set()  # the others' clients hang up: they stop too
        await asyncio.gather(other, plain)

    asyncio.run(scenario())
    # /quick itself was not flagged; the older one (replaced) and the two that hung up were
    assert sorted(seen) == [False, True, True, True]
    middleware = [m for m in _middleware_stack(app) if isinstance(m, CancelOnDisconnect)]
    assert len(middleware) == 1 and middleware[0].newest == {}  # no key outlives its requests


def _middleware_stack(app):
    layer = app.middleware_stack
    while layer is not None:
        yield layer
        layer = getattr(layer, "app", None)


def test_a_key_too_long_to_honour_is_refused_where_declared(client):
    response = client.post("/api/compare", json={"text": "Je mange."}, headers={"X-Supersede-Key": "k" * 129})
    assert response.status_code == 422
    assert "X-Supersede-Key" in str(response.json()["detail"]) or "x-supersede-key" in str(response.json())
    response = client.post("/api/compare", json={"text": "Je mange.", "models": ["rnn"]},
                           headers={"X-Supersede-Key": "visit"})
    assert response.status_code == 200 and response.json()["model"] == "rnn"
