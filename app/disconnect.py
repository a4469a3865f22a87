"""Work nobody waits for is not done: each request gets a flag that is set when its client hangs up.

The page asks about the text while the reader is still typing and drops (aborts) the requests of
a text that has changed since. Those requests may already wait in the model thread's queue, or be
decoding: the flag lets the model thread skip them, or stop them between two decoder steps, so the
newest text is not kept waiting behind answers that would be thrown away.

A plain ASGI middleware: once the request body has been read, the next message the server gives
is `http.disconnect`, either when the client closes the connection or when the response is done.

A client may also say which of its requests a new one replaces, sooner than closing the old one's
connection: requests that carry the same `X-Supersede-Key` header (the page sends one key per visit
with every POST /api/compare) are one stream of asks, and a newer one sets the older one's flag as
it arrives. Chromium closes an aborted request's connection only after the newer request has
arrived, and the older request's models would keep both cores busy until then (docs/SERVER.md).
"""

from __future__ import annotations

import asyncio
import threading

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app.runtime.gone import Gone
from app.runtime.metrics import Traffic

STATE_KEY = "client_gone"
SUPERSEDE_HEADER = b"x-supersede-key"
MAX_KEY_BYTES = 128  # a longer key is ignored here (and refused 422 where a route declares the header)


class CancelOnDisconnect:
    def __init__(self, app: ASGIApp, traffic: Traffic | None = None):
        self.app = app
        self.traffic = traffic or Traffic()  # counts the superseded requests for GET /metrics
        self.newest: dict[bytes, threading.Event] = {}  # supersede key -> the newest request's flag

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        gone = Gone()  # read from the model thread, so not an asyncio.Event
        scope.setdefault("state", {})[STATE_KEY] = gone
        key = supersede_key(scope)
        if key is not None:  # the event loop's thread only: no lock
            older = self.newest.get(key)
            if older is not None:
                older.set()  # replaced: its work stops as if its client had gone
                self.traffic.count("superseded")
            self.newest[key] = gone
        watcher: asyncio.Task | None = None

        async def watch() -> None:
            while (await receive())["type"] != "http.disconnect":
                pass
            gone.set()

        async def receive_body() -> Message:
            nonlocal watcher
            message = await receive()
            if message["type"] == "http.disconnect":
                gone.set()
            elif not message.get("more_body", False) and watcher is None:
                watcher = asyncio.create_task(watch())  # only requests with a body do model work
            return message

        try:
            await self.app(scope, receive_body, send)
        finally:
            if watcher is not None:
                watcher.cancel()
            if key is not None and self.newest.get(key) is gone:
                del self.newest[key]


def supersede_key(scope: Scope) -> bytes | None:
    """The request's X-Supersede-Key, if it has one of 1 to MAX_KEY_BYTES bytes."""
    for name, value in scope.get("headers", ()):
        if name == SUPERSEDE_HEADER:
            return value if 0 < len(value) <= MAX_KEY_BYTES else None
    return None
