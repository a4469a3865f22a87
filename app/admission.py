"""Admission control: a model request is refused at once when it would wait too long.

Every POST under /api/ is model work: it waits for the one model thread (app/runtime/model_thread.py).
What a new request would meet is the queue's age: how long the oldest work it would wait behind
has waited already. Work is served in turns between clients (app/runtime/scheduler.py), so that is
the client's own oldest queued work, or, when two or more other clients have work waiting and even
the freshest of theirs is that old, theirs (`wait_met`). Past `max_wait` seconds the client is
behind, and one more request of its is answered 503 with Retry-After: a client that keeps more in
flight than it is served is turned away, not the readers beside it, and when the whole replica is
behind a crowd is turned away while it can still be served elsewhere instead of everyone waiting
longer. Counting requests instead
turned away typing readers whose compares were stepped together in a few milliseconds: a reader
has about one request in flight at every key, however little work it is. A bound on the count,
`limit`, stays, far above that, for memory and the threads sync handlers hold while they wait.
GET requests (health, models, curves, static files, the page) are never counted nor refused;
health and the catalog are async handlers, so they need no pool thread either.

It runs inside `BodyLimit` (app/guard.py, app/main.py's order): a request is counted, and judged by
the queue's age, only once its whole body has arrived. Counted from its head, connections that send
a head and then trickle its body a byte at a time would fill `limit` and turn everyone else away
with 503; as it is, each such connection holds only itself, until BodyLimit's 408 closes it within
`body_timeout` seconds.
"""

from __future__ import annotations

import json
from collections.abc import Callable

from starlette.types import ASGIApp, Receive, Scope, Send

from app.clients import client_of
from app.runtime.metrics import Traffic
from app.runtime.scheduler import asking

RETRY_AFTER_S = 1


class Admission:
    def __init__(self, app: ASGIApp, limit: int, traffic: Traffic | None = None,
                 waited: Callable[[str], float] = lambda client: 0.0, max_wait: float = float("inf")):
        """limit: model requests in the server at once; waited(client): seconds a new request of
        `client` would wait behind queued model work that has waited already; past max_wait, refused."""
        self.app = app
        self.limit = limit
        self.waited, self.max_wait = waited, max_wait
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
        client = client_of(scope)
        behind = self.waited(client) > self.max_wait
        with traffic.lock:
            admitted = traffic.in_flight < self.limit and not behind
            traffic.in_flight += admitted
            traffic.refused += not admitted
        if not admitted:
            await self._busy(send, behind)
            return
        served = asking.set(client)  # the work it queues is this client's (app/runtime/scheduler.py)
        try:
            await self.app(scope, receive, send)
        finally:
            asking.reset(served)
            traffic.count("in_flight", -1)

    async def _busy(self, send: Send, behind: bool) -> None:
        why = (f"its model work has waited more than {self.max_wait:g} s" if behind
               else f"{self.limit} model requests in progress")
        body = json.dumps({"detail": f"the server is busy ({why}); try again in {RETRY_AFTER_S} s"}).encode()
        await send({"type": "http.response.start", "status": 503,
                    "headers": [(b"content-type", b"application/json"),
                                (b"retry-after", str(RETRY_AFTER_S).encode()),
                                (b"content-length", str(len(body)).encode())]})
        await send({"type": "http.response.body", "body": body})
