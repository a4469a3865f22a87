"""The RateLimit headers of a shared route's every answer, its errors included: the route's share
(app/dependencies.py's ClientShare) leaves what it last read in the request's scope, and this plain
ASGI middleware writes it into the answer's head (no BaseHTTPMiddleware: it would buffer streams)."""

from __future__ import annotations

from starlette.types import ASGIApp, Message, Receive, Scope, Send

RATELIMIT_KEY = "ratelimit"  # scope["state"][RATELIMIT_KEY]: the runtime's shares.Quota


class RateLimitHeaders:
    def __init__(self, app: ASGIApp):
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            send = with_quota(scope.setdefault("state", {}), send)
        await self.app(scope, receive, send)


def with_quota(state: dict, send: Send) -> Send:
    """`send` adding the headers of the share in `state`, if the route read one, to the answer's head."""

    async def sending(message: Message) -> None:
        quota = state.get(RATELIMIT_KEY)
        if message["type"] == "http.response.start" and quota is not None:
            present = {name.lower() for name, _ in message.get("headers", [])}
            extra = [(name.lower().encode(), value.encode()) for name, value in quota.headers().items()
                     if name.lower().encode() not in present]
            message = {**message, "headers": [*message.get("headers", []), *extra]}
        await send(message)

    return sending
