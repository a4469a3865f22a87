"""Work done ahead of the reader: at start-up, the answers every chapter asks for on the page's
default sentence are computed once, in the order a reader meets the chapters, so a first visit (or
a shared link such as `/?ch=3`) finds them in the result cache.

The requests go through the app's own routes, in process (`InProcess`): the same validation, the
same services and so the same cache keys as the page's requests, without the network, the request
log or the admission limit. They run one after another on a thread of their own, each queued on the
model thread like any request, so a reader who arrives meanwhile waits at most one answer behind.
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
import time
from typing import Any

import httpx
from fastapi import FastAPI

from app.services.registry import ModelRegistry

log = logging.getLogger("attention_lab")
DEFAULT_TEXT = "Je mange du pain."  # the sentence in the box when the page opens
DEFAULT_LENGTH = 80  # chapter 3's input length when the page opens (at most the server's limit)
DEFAULT_SEED = 1  # chapter 8's first shuffle
TOP_K = 5  # chapter 10's likeliest pieces per step


def default_length(registry: ModelRegistry) -> int:
    return min(DEFAULT_LENGTH, registry.limits.max_gradient_length)


class InProcess:
    """The API's routes called in this process, on `registry`, with no middleware around them."""

    def __init__(self, registry: ModelRegistry):
        from app.routes import (  # the routers, not app.main: this module is imported by it
            compare,
            gradients,
            heads,
            order,
            predict,
            recap,
            recurrence,
            scaling,
            scores,
        )

        self.app = FastAPI()
        self.app.state.registry = registry
        for module in (compare, gradients, heads, order, predict, recap, recurrence, scaling, scores):
            self.app.include_router(module.router)

    async def post(self, path: str, body: dict[str, Any]) -> Any:
        """The JSON answer of POST `path` (a streamed answer: the list of its lines' objects); an
        answer that is not 200 raises httpx.HTTPStatusError."""
        transport = httpx.ASGITransport(app=self.app)
        async with httpx.AsyncClient(transport=transport, base_url="http://in-process") as client:
            response = await client.post(path, json=body, timeout=None)
            response.raise_for_status()
            if response.headers.get("content-type", "").startswith("application/x-ndjson"):
                return [json.loads(line) for line in response.text.splitlines() if line.strip()]
            return response.json()


def first_visit(registry: ModelRegistry, text: str = DEFAULT_TEXT) -> list[tuple[str, dict[str, Any]]]:
    """What the page asks about `text` with its default settings, chapter by chapter: (path, body)."""
    models = registry.models.values()
    names = [m.name for m in models]
    aligning = [m.name for m in models if m.capabilities.recurrent and m.capabilities.cross_attention]
    heads = next((m for m in models if "encoder" in m.capabilities.attention_kinds), None)
    asks: list[tuple[str, dict[str, Any]]] = [
        ("/api/compare", {"text": text, "models": names[::-1]}),  # chapters 4, 5 and 9's maps
        ("/api/recurrence", {"text": text}),  # chapter 2
        ("/api/gradients", {"text": text, "length": default_length(registry), "initialized": True,
                            "factors": True}),  # chapter 3
    ]
    asks += [("/api/scores", {"text": text, "model": name, "row": 0, "temperature": 1}) for name in aligning]
    asks += [("/api/scaling", {"text": text}), ("/api/order", {"text": text, "seed": DEFAULT_SEED})]
    if heads is not None:
        asks += [("/api/heads", {"text": text, "model": heads.name, "heads_off": []}),
                 ("/api/predict", {"text": text, "model": heads.name, "prefix": [], "top_k": TOP_K,
                                   "beam_size": 1})]
    return [*asks, ("/api/recap", {"text": text})]  # chapter 11


async def ask_all(client: InProcess, asks: list[tuple[str, dict[str, Any]]],
                  stopped: threading.Event | None = None) -> int:
    """Ask each in turn until `stopped` is set (the server is shutting down); returns how many were
    answered (a failure is logged, not raised)."""
    answered = 0
    for path, body in asks:
        if stopped is not None and stopped.is_set():
            break
        try:
            await client.post(path, body)
            answered += 1
        except Exception as error:  # noqa: BLE001 - ahead-of-time work must never stop the server
            if stopped is None or not stopped.is_set():  # the model thread closing: not a failure
                log.warning("computing %s ahead failed: %s", path, error)
    return answered


class Ahead(threading.Thread):
    """The default sentence's answers computed on a thread of its own; `stop()` before the registry
    closes ends it after the answer being computed."""

    def __init__(self, registry: ModelRegistry):
        super().__init__(name="ahead", daemon=True)
        self.registry = registry
        self.stopped = threading.Event()

    def run(self) -> None:
        began = time.perf_counter()
        asks = first_visit(self.registry)
        answered = asyncio.run(ask_all(InProcess(self.registry), asks, self.stopped))
        log.info("default sentence: %d of %d answers computed ahead in %.1f s", answered, len(asks),
                 time.perf_counter() - began)

    def stop(self) -> None:
        self.stopped.set()


def start(registry: ModelRegistry) -> Ahead | None:
    """Compute the default sentence's answers ahead (None: no cache to keep them in)."""
    if registry.jobs.cache.size <= 0:
        return None
    work = Ahead(registry)
    work.start()
    return work
