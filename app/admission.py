"""Admission control: a bounded number of model requests per replica, the rest refused at once.

Every POST under /api/ is model work: it waits for the one model thread (app/runtime/worker.py),
holding a thread of the shared pool while it waits. Without a bound, a crowd fills the queue (every
request waits behind all the others) and the pool (so plain handlers and static files wait too).
Here at most `limit` such requests are in the server at a time, running or waiting; one more is
answered 503 with Retry-After before its body is read. GET requests (health, models, curves,
static files, the page) are never counted nor refused; health and the catalog are async handlers,
so they need no pool thread either, and the pool always keeps threads for static files.
"""

from __future__ import annotations

import json

from starlette.types import ASGIApp, Receive, Scope, Send

from app.runtime.metrics import Traffic

RETRY_AFTER_S = 1


class Admission:
    def __init__(self, app: ASGIApp, limit: int, traffic: Traffic | None = None):
        self.app = app
        self.limit = limit
        self.traffic = traffic or Traffic()  # shared with GET /metrics
        self.traffic.limit = limit

    @property
    def in_flight(self) -> int:
        return self.traffic.in_flight

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST" or not scope["path"].startswith("/api/"):
            await self.app(scope, receive, send)
            return
        traffic = self.traffic
        with traffic.lock:
            admitted = traffic.in_flight < self.limit
            traffic.in_flight += admitted
            traffic.refused += not admitted
        if not admitted:
            await self._busy(send)
            return
        try:
            await self.app(scope, receive, send)
        finally:
            traffic.count("in_flight", -1)

    async def _busy(self, send: Send) -> None:
        body = json.dumps({"detail": f"the server is busy ({self.limit} model requests in progress); "
                                     f"try again in {RETRY_AFTER_S} s"}).encode()
        await send({"type": "http.response.start", "status": 503,
                    "headers": [(b"content-type", b"application/json"),
                                (b"retry-after", str(RETRY_AFTER_S).encode()),
                                (b"content-length", str(len(body)).encode())]})
        await send({"type": "http.response.body", "body": body})
