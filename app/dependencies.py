"""Typed dependencies: a handler states what it needs, tests swap it via dependency_overrides."""

from __future__ import annotations

import threading
from typing import Annotated

from fastapi import Depends, Request

from app.disconnect import STATE_KEY
from app.services.registry import ModelRegistry


# async: FastAPI runs a plain def dependency on the thread pool, which model requests may hold;
# these only read, so health and the catalog (async handlers) never wait for a thread.
async def get_registry(request: Request) -> ModelRegistry:
    return request.app.state.registry  # loaded once, in the lifespan


async def client_gone(request: Request) -> threading.Event:
    """Set once the client hangs up (app/disconnect.py); never set without that middleware."""
    return request.scope.get("state", {}).get(STATE_KEY) or threading.Event()


Registry = Annotated[ModelRegistry, Depends(get_registry)]
ClientGone = Annotated[threading.Event, Depends(client_gone)]
