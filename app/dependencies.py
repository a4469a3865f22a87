"""Typed dependencies: a handler states what it needs, tests swap it via dependency_overrides."""

from __future__ import annotations

import asyncio
from functools import partial
from typing import Annotated

from fastapi import Depends, Header, Request

from app.clients import client_of
from app.disconnect import MAX_KEY_BYTES, STATE_KEY
from app.ratelimit import RATELIMIT_KEY
from app.runtime.gone import Gone
from app.runtime.registry import ModelRegistry
from app.runtime.shares import Meter, Quota, Shares, ShareSpentError


# async: FastAPI runs a plain def dependency on the thread pool, which model requests may hold;
# these only read, so health and the catalog (async handlers) never wait for a thread.
async def get_registry(request: Request) -> ModelRegistry:
    return request.app.state.registry  # loaded once, in the lifespan


async def client_gone(request: Request) -> Gone:
    """Set once the client hangs up (app/disconnect.py); never set without that middleware."""
    return request.scope.get("state", {}).get(STATE_KEY) or Gone()


class ClientShare:
    """One client's share of one experiment (app/runtime/shares.py), for one request: `read` at the
    start (429 when spent), `charge` with what the request's work cost once it has run, or `take`
    one ask at the moment the work starts. Whatever it last read is the answer's RateLimit headers
    (app/ratelimit.py). Shares off: all of it is nothing."""

    def __init__(self, shares: Shares | None, name: str, client: str, state: dict):
        self.shares = shares if shares is not None and name in shares.budgets else None
        self.name = name
        self.client = client
        self.state = state  # the request scope's: where the answer's headers are read from
        self.meter = Meter()  # the model time the request's work took

    async def read(self, refuse: bool) -> None:
        """The client's share now, into the answer's headers; ShareSpentError (429) if `refuse`
        and there is no room."""
        if self.shares is None:
            return
        check = partial(self.shares.check, self.name, self.client)
        self._told(await asyncio.to_thread(check) if self.shares.blocking else check(), refuse)

    def take(self) -> None:
        """One ask, charged now, as the work starts (ShareSpentError when there is no room); from a
        thread, never the event loop, where a Redis is configured."""
        if self.shares is not None:  # a refusal's headers are its own (ShareSpentError.headers)
            self._told(self.shares.take(self.name, self.client), False)

    def charge(self, cost: float | None = None) -> None:
        """Charge `cost` units (default: the model seconds the meter counted); from a thread, never
        the event loop, where a Redis is configured."""
        cost = self.meter.seconds if cost is None else cost
        if self.shares is not None and cost > 0:
            self._told(self.shares.charge(self.name, self.client, cost), False)

    async def charge_async(self, cost: float | None = None) -> None:
        if self.shares is not None and self.shares.blocking:
            await asyncio.to_thread(self.charge, cost)
        else:
            self.charge(cost)

    def _told(self, quota: Quota, refuse: bool) -> None:
        self.state[RATELIMIT_KEY] = quota
        if refuse and quota.spent:
            raise ShareSpentError(quota, self.shares.budgets[self.name].unit)


def share_of(name: str, refuse: bool = True):
    """A dependency: the asking client's share of `name`, read before the route runs; with `refuse`,
    a spent share is 429 before any work (a route whose answer may be free, such as a kept timing,
    takes its ask itself when the work starts)."""

    async def dependency(request: Request) -> ClientShare:
        share = ClientShare(getattr(request.app.state, "shares", None), name, client_of(request.scope),
                            request.scope.setdefault("state", {}))
        await share.read(refuse)
        return share

    return Annotated[ClientShare, Depends(dependency)]


Registry = Annotated[ModelRegistry, Depends(get_registry)]
ClientGone = Annotated[Gone, Depends(client_gone)]
ModelTime = share_of("model_time")  # the gradients chapter's gradient experiments, by the model time they take

# Read by app/disconnect.py before the route runs; declared here so the schema documents it and a
# key too long to be honoured is refused (422) instead of silently ignored.
SupersedeKey = Annotated[str | None, Header(
    alias="X-Supersede-Key", min_length=1, max_length=MAX_KEY_BYTES,
    description="Requests with the same key are one stream of asks: a newer one stops the older one's "
                "work as if its client had hung up (the page sends one key per visit).")]
