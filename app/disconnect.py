"""Work nobody waits for is not done: each request gets a flag that is set when its client hangs up.

The page asks about the text while the reader is still typing and drops (aborts) the requests of
a text that has changed since. Those requests may already wait in the model thread's queue, or be
decoding: the flag lets the model thread skip them, or stop them between two decoder steps, so the
newest text is not kept waiting behind answers that would be thrown away.

A plain ASGI middleware: once the request body has been read, the next message the server gives
is `http.disconnect`, either when the client closes the connection or when the response is done.
"""

from __future__ import annotations

import asyncio
import threading

from starlette.types import ASGIApp, Message, Receive, Scope, Send

STATE_KEY = "client_gone"


class CancelOnDisconnect:
    def __init__(self, app: ASGIApp):
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        gone = threading.Event()  # read from the model thread, so not an asyncio.Event
        scope.setdefault("state", {})[STATE_KEY] = gone
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
