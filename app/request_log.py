"""One log line per request, and a log an operator can read.

    INFO attention_lab.requests: POST /api/compare 200 41.3 ms id=5f0c2a9e

`RequestLog` writes that line when the answer's last byte has been handed over (a streamed answer
included), or when the request ends without one. The id comes from the client's `X-Request-Id` when
it is a short plain token, else it is made here; either way the answer carries it back, so a
reader's report can be matched to its line. Work superseded by a newer keystroke, or whose client
left, is a 499 line here and a count in GET /api/health (`dropped`), never a traceback: tracebacks
are kept for real faults (app/main.py's handler for unexpected errors).

uvicorn's own access log says less (no duration, no id) and is turned off where uvicorn is started
(`--no-access-log` in the Makefile and the Dockerfile).
"""

from __future__ import annotations

import itertools
import logging
import re
import secrets
import sys
import time

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app.runtime.metrics import Metrics

log = logging.getLogger("attention_lab.requests")
HEADER = b"x-request-id"
CLIENT_ID = re.compile(rb"[A-Za-z0-9._-]{1,64}")
NO_ANSWER = 499  # the request ended before any answer started (its client hung up)
# ids made here: 8 hex digits counting on from a random start, distinct within a process (asking the
# system for random bytes at every request cost more than the rest of the id's work together)
_NEXT_ID = itertools.count(secrets.randbits(32))


def configure_logging(level: str) -> None:
    """The app's loggers ("attention_lab" and below) at `level`, written to stderr beside uvicorn's
    own lines. Done once per process: a second app in the same process adds no second handler."""
    logger = logging.getLogger("attention_lab")
    logger.setLevel(level.upper())
    if not any(getattr(h, "attention_lab", False) for h in logger.handlers):
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(levelname)s: %(name)s: %(message)s"))
        handler.attention_lab = True
        logger.addHandler(handler)  # uvicorn gives the root logger no handler: each line is written once


class RequestLog:
    def __init__(self, app: ASGIApp, metrics: Metrics | None = None):
        self.app = app
        self.metrics = metrics  # each request's duration, by route template (GET /metrics)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        began = time.perf_counter()
        rid = request_id(scope)
        status = NO_ANSWER
        logged = False

        def write(code: int) -> None:
            nonlocal logged
            if not logged:
                logged = True
                seconds = time.perf_counter() - began
                log.info("%s %s %d %.1f ms id=%s", scope["method"], scope["path"], code, seconds * 1000, rid)
                if self.metrics is not None:
                    self.metrics.observe(scope["method"], route_label(scope), code, seconds)

        async def send_logged(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
                message = {**message, "headers": [*message.get("headers", []), (HEADER, rid.encode())]}
            await send(message)
            if message["type"] == "http.response.body" and not message.get("more_body", False):
                write(status)

        try:
            await self.app(scope, receive, send_logged)
        except Exception:
            status = 500 if status == NO_ANSWER else status
            raise
        finally:  # a cancelled request (its client gone) keeps NO_ANSWER
            write(status)


def route_label(scope: Scope) -> str:
    """The route's template (/api/models/{name}/curve), so the metrics' labels stay few whatever
    paths clients ask for: static files as one, anything unrouted as "other"."""
    route = scope.get("route")  # set by FastAPI's routing on this same scope
    if getattr(route, "path", None):
        return route.path
    return "/static" if scope["path"].startswith("/static/") else "other"


def request_id(scope: Scope) -> str:
    """The client's X-Request-Id if it is a short plain token, else 8 hex digits made here."""
    for name, value in scope.get("headers", ()):
        if name == HEADER and CLIENT_ID.fullmatch(value):
            return value.decode()
    return f"{next(_NEXT_ID) & 0xFFFFFFFF:08x}"
