"""Typed dependencies: a handler states what it needs, tests swap it via dependency_overrides."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Header, Request

from app.disconnect import MAX_KEY_BYTES, STATE_KEY
from app.runtime.gone import Gone
from app.runtime.registry import ModelRegistry
from app.runtime.shares import Quota, Shares


# async: FastAPI runs a plain def dependency on the thread pool, which model requests may hold;
# these only read, so health and the catalog (async handlers) never wait for a thread.
async def get_registry(request: Request) -> ModelRegistry:
    return request.app.state.registry  # loaded once, in the lifespan


async def client_gone(request: Request) -> Gone:
    """Set once the client hangs up (app/disconnect.py); never set without that middleware."""
    return request.scope.get("state", {}).get(STATE_KEY) or Gone()


class ClientShare:
    """One client's shares: `take(name)` spends an ask (ShareSpentError, 429, when none is left)."""

    def __init__(self, shares: Shares | None, client: str):
        self.shares = shares
        self.client = client

    def take(self, name: str) -> Quota | None:
        if self.shares is None or name not in self.shares.items:
            return None
        return self.shares.take(name, self.client)


async def client_share(request: Request) -> ClientShare:
    """The asking client is its address: behind a trusted proxy, uvicorn's ProxyHeadersMiddleware
    (--forwarded-allow-ips) has already put X-Forwarded-For's first untrusted address there."""
    client = request.client.host if request.client else "unknown"
    return ClientShare(getattr(request.app.state, "shares", None), client)


Registry = Annotated[ModelRegistry, Depends(get_registry)]
ClientGone = Annotated[Gone, Depends(client_gone)]
Share = Annotated[ClientShare, Depends(client_share)]

# Read by app/disconnect.py before the route runs; declared here so the schema documents it and a
# key too long to be honoured is refused (422) instead of silently ignored.
SupersedeKey = Annotated[str | None, Header(
    alias="X-Supersede-Key", min_length=1, max_length=MAX_KEY_BYTES,
    description="Requests with the same key are one stream of asks: a newer one stops the older one's "
                "work as if its client had hung up (the page sends one key per visit).")]
