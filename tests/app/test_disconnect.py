"""A client that hangs up gets no work done for it: queued work is skipped, decoding stops."""

from __future__ import annotations

import asyncio

import pytest
from fastapi import FastAPI

from app.dependencies import ClientGone
from app.disconnect import CancelOnDisconnect
from app.services.worker import Abandoned
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


async def _call(app, path: str, hang_up_after: float | None = None) -> list[dict]:
    """Drive the ASGI app by hand: the request body, then (optionally) the client hangs up."""
    queue: asyncio.Queue = asyncio.Queue()
    queue.put_nowait({"type": "http.request", "body": b"{}", "more_body": False})
    sent: list[dict] = []

    async def send(message):
        sent.append(message)

    async def hang_up():
        await asyncio.sleep(hang_up_after)
        queue.put_nowait({"type": "http.disconnect"})

    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST",
             "scheme": "http", "path": path, "raw_path": path.encode(), "query_string": b"",
             "headers": [(b"content-type", b"application/json"), (b"host", b"test")],
             "client": ("127.0.0.1", 1), "server": ("127.0.0.1", 80), "root_path": ""}
    leaving = asyncio.create_task(hang_up()) if hang_up_after is not None else None
    await asyncio.wait_for(app(scope, queue.get, send), timeout=10)
    if leaving:
        await leaving
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
