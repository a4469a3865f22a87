"""What the page asks of a route on its first visit, declared once by the service that answers it.

A service whose route the page calls on the default sentence sets `PAGE`: the route's path, its
request model, `answer` (the service call on a validated body, which the route's handler makes
too) and `bodies` (the page's JSON bodies for a first visit). app/services/ahead.py reads them all
to compute those answers at start-up, in the order app/chapters.py gives the routes."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from app.runtime.registry import ModelRegistry
from app.schemas.base import Request

Cancel = threading.Event | None


@dataclass(frozen=True)
class Visit:
    """What a first visit's requests are made of: the sentence and what the loaded models offer."""

    text: str
    models: tuple[str, ...]  # every loaded model, in the catalogue's order
    aligning: tuple[str, ...]  # the recurrent models with cross-attention
    with_heads: str | None  # the first model with encoder self-attention, if any
    length: int  # the gradient experiment's default input length
    seed: int
    top_k: int


@dataclass(frozen=True)
class PageRequest:
    """One route as the page asks it on a first visit."""

    path: str
    schema: type[Request]
    answer: Callable[[ModelRegistry, Any, Cancel], Any]
    bodies: Callable[[Visit], list[dict[str, Any]]]
