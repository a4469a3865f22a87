"""What every response gets and every request may not do, as plain ASGI middlewares (no
BaseHTTPMiddleware: it would buffer streamed answers and run in another task).

- `BodyLimit`: a request body longer than the limit is answered 413 before anything parses it: at
  once when Content-Length says so, else as soon as the chunks read add up to more. A body not all
  there within `timeout` seconds of the request's head (sent a byte at a time, or stopped halfway)
  is answered 408 and its connection closed, so slow senders cannot hold connections (app/serving.py
  bounds the head the same way). A body holding NaN, Infinity or -Infinity, which JSON (RFC 8259)
  does not have but Python's parser reads, is answered 422 naming each place, before any work. The
  body (at most the limit) is then handed to the app as one message.
- `SecurityHeaders`: CSP, nosniff, Referrer-Policy and frame denial on every response (the API docs'
  pages get DOCS_CSP: the same origin only, like every page, plus ReDoc's blob: worker; an embedded
  figure, /embed/..., gets EMBED_CSP: any site may frame it), a charset on
  JSON, and a relative `Location` on Starlette's slash redirects (which otherwise copy the request's
  Host header into an absolute URL). Unhandled errors included: Starlette answers those from its
  outermost layer (ServerErrorMiddleware), outside every middleware the app adds, so an error that
  gets here before the answer has started is answered here, as a JSON 500 with the headers, and
  raised on (the app's handler still logs it; its own answer is dropped, one having been sent).
- `Compress`: gzip, at a level per kind of answer. What GET serves, the same for every reader (the
  page's files and the catalog of the first load, a budget the page keeps: bench/bench_page.py), at
  level 5; the answers POST computes for a request's text while the reader waits, at level 1: a
  fraction of level 5's time for somewhat more bytes (bench/floor.py's HTTP / in-process ratio
  counts that time). Plotly (most of the first load) is the exception: compressed once per process
  at level 9 (`gzipped_once`), a little smaller than level 5 for a one-off cost, and served as it
  is, since the middleware leaves an answer that already has a Content-Encoding alone.
"""

from __future__ import annotations

import asyncio
import functools
import gzip
import json
from pathlib import Path

from starlette.middleware.gzip import GZipMiddleware
from starlette.types import ASGIApp, Message, Receive, Scope, Send

# Plotly styles its SVG inline and downloads figures through data: and blob: URLs; nothing else is
# loaded from anywhere but this server.
CSP = ("default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data: blob:; "
       "object-src 'none'; base-uri 'none'; frame-ancestors 'none'")
# /docs and /redoc (app/routes/docs.py: Swagger UI and ReDoc from the installed fastapi-offline
# package, started by static/js/docs.js) load nothing from elsewhere either, and run no inline
# script. ReDoc styles inline (styled-components' <style> elements), both draw icons from data: SVGs,
# and ReDoc runs its search index in a worker made from a blob: URL.
DOCS_CSP = ("default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; "
            "worker-src blob:; object-src 'none'; base-uri 'none'; frame-ancestors 'none'")
DOCS_PATHS = ("/docs", "/redoc")
# /embed/<figure> (app/routes/pages.py) is the one page made to sit in another site's <iframe>: any
# site may frame it. Everything else refuses to be framed.
EMBED_CSP = CSP.replace("frame-ancestors 'none'", "frame-ancestors *")
EMBED_PREFIX = "/embed/"
FRAME_DENIAL = (b"x-frame-options", b"DENY")
COMMON = [(b"x-content-type-options", b"nosniff"), (b"referrer-policy", b"no-referrer"),
          FRAME_DENIAL, (b"cross-origin-opener-policy", b"same-origin")]
WITH_CHARSET = {b"application/json", b"application/x-ndjson"}
NON_FINITE_LITERALS = (b"NaN", b"Infinity")  # -Infinity contains the second
ECHO_CHARS = 64  # a 422 names at most this much of a key the client sent
MOST_PLACES = 16  # a 422 names at most this many places


@functools.cache
def gzipped_once(path: Path) -> bytes:
    """A file that never changes while the server runs (an installed package's), gzipped at the
    hardest level once: the same bytes for every reader (no timestamp in the header)."""
    return gzip.compress(path.read_bytes(), compresslevel=9, mtime=0)


class Compress:
    def __init__(self, app: ASGIApp, minimum_size: int = 1000, served_level: int = 5, computed_level: int = 1):
        # level 5 for what GET serves, not the default 9: on a large attention payload 9 takes many
        # times longer for a few percent fewer bytes
        self.served = GZipMiddleware(app, minimum_size=minimum_size, compresslevel=served_level)
        self.computed = GZipMiddleware(app, minimum_size=minimum_size, compresslevel=computed_level)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        computed = scope["type"] == "http" and scope["method"] == "POST"
        await (self.computed if computed else self.served)(scope, receive, send)


class BodyLimit:
    def __init__(self, app: ASGIApp, max_bytes: int, timeout: float = 10.0):
        self.app = app
        self.max_bytes = max_bytes
        self.timeout = timeout

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        length = dict(scope["headers"]).get(b"content-length")
        if length is not None and (not length.isdigit() or int(length) > self.max_bytes):
            await self._too_large(send, 413 if length.isdigit() else 400)
            return
        chunks: list[bytes] = []
        try:
            async with asyncio.timeout(self.timeout):
                message = await self._read(receive, chunks)
        except TimeoutError:
            await send_json(send, 408, f"request body not received within {self.timeout:g} s", close=True)
            return
        if message is None:
            await self._too_large(send, 413)
            return
        if message["type"] == "http.disconnect":  # the client left before its body was whole: nobody to answer
            return
        body = b"".join(chunks)
        places = non_finite_places(body) if scope["method"] != "GET" else []
        if places:
            await send_json(send, 422, [_not_a_number(literal, loc) for literal, loc in places[:MOST_PLACES]])
            return
        first: Message = {"type": "http.request", "body": body, "more_body": False}
        if message["type"] != "http.request":
            first = message
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return first
            return await receive()

        await self.app(scope, replay, send)

    async def _read(self, receive: Receive, chunks: list[bytes]) -> Message | None:
        """Read the body into `chunks`: the last message read, or None once it is over the limit."""
        size = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                return message  # the client left while sending
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_bytes:
                return None
            chunks.append(chunk)
            if not message.get("more_body", False):
                return message

    async def _too_large(self, send: Send, status: int) -> None:
        detail = (f"request body over {self.max_bytes} bytes" if status == 413
                  else "invalid Content-Length header")
        await send_json(send, status, detail, close=True)


class _Literal(str):
    """A NaN or infinity literal as the parser met it (its name), to be found again in the result."""


def non_finite_places(body: bytes) -> list[tuple[str, list]]:
    """Each NaN, Infinity or -Infinity number in a JSON body, with its place as FastAPI writes one
    (["body", key or index, ...]); [] for a body without them or that is not JSON at all (the
    route's own parsing answers that). Only a body that spells one is parsed here."""
    if not any(literal in body for literal in NON_FINITE_LITERALS):
        return []
    try:
        value = json.loads(body, parse_constant=_Literal)
    except (ValueError, RecursionError):  # not UTF-8 JSON, or nested past the parser's depth
        return []
    found: list[tuple[str, list]] = []
    pending: list[tuple[object, list]] = [(value, ["body"])]
    while pending:
        item, loc = pending.pop()
        if isinstance(item, _Literal):
            found.append((str(item), loc))
        elif isinstance(item, dict):
            pending += [(v, [*loc, _short(k)]) for k, v in item.items()]
        elif isinstance(item, list):
            pending += [(v, [*loc, i]) for i, v in enumerate(item)]
    return sorted(found, key=lambda place: [str(p) for p in place[1]])


def _short(key: str) -> str:
    return key[:ECHO_CHARS] + "..." if len(key) > ECHO_CHARS else key


def _not_a_number(literal: str, loc: list) -> dict:
    """One place in the shape of FastAPI's own 422 errors (pydantic's type for NaN in a finite field)."""
    return {"type": "finite_number", "loc": loc, "input": literal,
            "msg": f"{literal} is not a JSON number (RFC 8259 has no NaN or infinity): send a finite number"}


class SecurityHeaders:
    def __init__(self, app: ASGIApp):
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False
        send_with_headers = with_headers(scope, send)

        async def tracked(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send_with_headers(message)

        try:
            await self.app(scope, receive, tracked)
        except Exception as error:
            if not started:
                detail = f"internal error ({type(error).__name__}); please report it"
                await send_json(send_with_headers, 500, detail)
            raise


async def send_json(send: Send, status: int, detail: str | list, close: bool = False) -> None:
    """A whole `{"detail": ...}` answer; `close`: the connection is closed after it (the request's body
    is left unread, so the next bytes on the connection would not be a request)."""
    body = json.dumps({"detail": detail}).encode()
    headers = [(b"content-type", b"application/json; charset=utf-8"),
               (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status,
                "headers": headers + ([(b"connection", b"close")] if close else [])})
    await send({"type": "http.response.body", "body": body})


def with_headers(scope: Scope, send: Send) -> Send:
    """`send` adding the headers to the response's start (and fixing its type and Location)."""
    path = scope["path"]
    framed = path.startswith(EMBED_PREFIX)
    csp = (DOCS_CSP if path in DOCS_PATHS else EMBED_CSP if framed else CSP).encode()
    common = [header for header in COMMON if not (framed and header == FRAME_DENIAL)]

    async def send_with_headers(message: Message) -> None:
        if message["type"] == "http.response.start":
            headers = []
            for name, value in message.get("headers", []):
                if name == b"content-type" and value.split(b";")[0].strip() in WITH_CHARSET \
                        and b"charset" not in value:
                    value = value + b"; charset=utf-8"
                elif name == b"location":
                    value = relative(value)
                headers.append((name, value))
            present = {name for name, _ in headers}
            headers += [(name, value) for name, value in [(b"content-security-policy", csp), *common]
                        if name not in present]
            message = {**message, "headers": headers}
        await send(message)

    return send_with_headers


def relative(location: bytes) -> bytes:
    """An absolute Location as a path: the app's only absolute ones are Starlette's slash redirects,
    built from the Host header, which is the client's to choose (a forged one would redirect away)."""
    text = location.decode("latin-1")
    if "://" not in text.split("?")[0]:
        return location
    rest = text.split("://", 1)[1]
    path = "/" + rest.split("/", 1)[1] if "/" in rest else "/"
    return ("/" + path.lstrip("/")).encode("latin-1")  # never "//host": a scheme-relative URL
