"""What every response gets and every request may not do, as plain ASGI middlewares (no
BaseHTTPMiddleware: it would buffer streamed answers and run in another task).

- `BodyLimit`: a request body longer than the limit is answered 413 before anything parses it: at
  once when Content-Length says so, else as soon as the chunks read add up to more. The body (at
  most the limit) is then handed to the app as one message.
- `SecurityHeaders`: CSP, nosniff, Referrer-Policy and frame denial on every response, a charset on
  JSON, and a relative `Location` on Starlette's slash redirects (which otherwise copy the request's
  Host header into an absolute URL).
"""

from __future__ import annotations

import json

from starlette.types import ASGIApp, Message, Receive, Scope, Send

# Plotly styles its SVG inline and downloads figures through data: and blob: URLs; nothing else is
# loaded from anywhere but this server.
CSP = ("default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data: blob:; "
       "object-src 'none'; base-uri 'none'; frame-ancestors 'none'")
# /docs and /redoc (off unless ATTENTION_LAB_DOCS is set) are FastAPI's pages: an inline script that
# loads Swagger UI / ReDoc from jsDelivr.
DOCS_CSP = ("default-src 'self'; script-src 'self' 'unsafe-inline' https://cdn.jsdelivr.net; "
            "style-src 'self' 'unsafe-inline' https://cdn.jsdelivr.net https://fonts.googleapis.com; "
            "font-src https://fonts.gstatic.com; img-src 'self' data: https://fastapi.tiangolo.com; "
            "worker-src blob:; object-src 'none'; base-uri 'none'; frame-ancestors 'none'")
DOCS_PATHS = ("/docs", "/docs/oauth2-redirect", "/redoc")
COMMON = [(b"x-content-type-options", b"nosniff"), (b"referrer-policy", b"no-referrer"),
          (b"x-frame-options", b"DENY"), (b"cross-origin-opener-policy", b"same-origin")]
WITH_CHARSET = {b"application/json", b"application/x-ndjson"}


class BodyLimit:
    def __init__(self, app: ASGIApp, max_bytes: int):
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        length = dict(scope["headers"]).get(b"content-length")
        if length is not None and (not length.isdigit() or int(length) > self.max_bytes):
            await self._too_large(send, 413 if length.isdigit() else 400)
            return
        chunks, size, message = [], 0, None
        while True:
            message = await receive()
            if message["type"] != "http.request":
                break  # the client left while sending: the app reads the disconnect itself
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_bytes:
                await self._too_large(send, 413)
                return
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        first: Message = {"type": "http.request", "body": b"".join(chunks), "more_body": False}
        if message is not None and message["type"] != "http.request":
            first = message
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return first
            return await receive()

        await self.app(scope, replay, send)

    async def _too_large(self, send: Send, status: int) -> None:
        detail = (f"request body over {self.max_bytes} bytes" if status == 413
                  else "invalid Content-Length header")
        body = json.dumps({"detail": detail}).encode()
        await send({"type": "http.response.start", "status": status,
                    "headers": [(b"content-type", b"application/json; charset=utf-8"),
                                (b"content-length", str(len(body)).encode()), (b"connection", b"close")]})
        await send({"type": "http.response.body", "body": body})


class SecurityHeaders:
    def __init__(self, app: ASGIApp):
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self.app(scope, receive, with_headers(scope, send) if scope["type"] == "http" else send)


def with_headers(scope: Scope, send: Send) -> Send:
    """`send` adding the headers to the response's start (and fixing its type and Location)."""
    csp = (DOCS_CSP if scope["path"] in DOCS_PATHS else CSP).encode()

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
            headers += [(name, value) for name, value in [(b"content-security-policy", csp), *COMMON]
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
