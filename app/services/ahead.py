"""Work done ahead of the reader: at start-up, the answers every chapter asks for on the page's
default sentence are computed once, in the order a reader meets the chapters, so a first visit (or
a shared link such as `/?ch=3`) finds them in the result cache.

Each ask is the page's request (its path and body, with the defaults of app/defaults.py) and the
service call its route makes. The body is read by the route's own request schema, so its defaults
fill in as they do for the page, and the service builds the same cache key. Nothing goes through
HTTP or the routers: the asks run one after another on a thread of their own, each queued on the
model thread like any request, so a reader who arrives meanwhile waits at most one answer behind.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from app import defaults
from app.runtime.registry import ModelRegistry
from app.runtime.worker import Abandoned
from app.schemas import (
    CompareRequest,
    GradientsRequest,
    HeadsRequest,
    LookupRequest,
    NextTokenRequest,
    OrderRequest,
    PredictRequest,
    RecurrenceRequest,
    Request,
    ScalingRequest,
    ScoresRequest,
    TextRequest,
    TranslateRequest,
)
from app.services.comparison import comparison
from app.services.gradients import gradient_curves
from app.services.heads import heads
from app.services.inference import DecodeOptions
from app.services.lookup import lookup
from app.services.next_token import next_token
from app.services.order import order
from app.services.predict import prediction
from app.services.recap import recap
from app.services.recurrence import recurrence
from app.services.scaling import scaling
from app.services.scores import attention_scores
from app.services.translation import translation
from models.decoding import Stopped

log = logging.getLogger("attention_lab")
Cancel = threading.Event | None


@dataclass(frozen=True)
class Ask:
    """One request of the page's first visit and how its route answers it."""

    path: str  # the page's request ...
    body: dict[str, Any]  # ... and its JSON body
    schema: type[Request]  # the route's request model
    call: Callable[[ModelRegistry, Any, Cancel], Any]  # the route's service call on the validated body

    def answer(self, registry: ModelRegistry, cancel: Cancel = None) -> Any:
        return self.call(registry, self.schema.model_validate(self.body), cancel)


def first_visit(registry: ModelRegistry, text: str = defaults.TEXT) -> list[Ask]:
    """What the page asks about `text` with its default settings, chapter by chapter."""
    models = registry.models.values()
    names = [m.name for m in models]
    aligning = [m.name for m in models if m.capabilities.recurrent and m.capabilities.cross_attention]
    with_heads = next((m for m in models if "encoder" in m.capabilities.attention_kinds), None)
    length = defaults.length(registry.limits.max_gradient_length)
    asks = [
        Ask("/api/compare", {"text": text, "models": names[::-1]}, CompareRequest,  # chapters 4, 5 and 9's maps
            lambda r, b, c: list(comparison(r, b.text, tuple(b.models), c))),
        Ask("/api/recurrence", {"text": text}, RecurrenceRequest,  # chapter 2
            lambda r, b, c: recurrence(r, b.text, b.model, c)),
        Ask("/api/gradients", {"text": text, "length": length, "initialized": True, "factors": True},
            GradientsRequest,  # chapter 3
            lambda r, b, c: gradient_curves(r, b.text, b.length, tuple(b.models), c, b.initialized, b.factors)),
    ]
    asks += [Ask("/api/scores", {"text": text, "model": name, "row": 0, "temperature": 1}, ScoresRequest,
                 lambda r, b, c: attention_scores(r, b.text, b.model, b.row, b.temperature, c))
             for name in aligning]  # chapter 5
    asks += [
        Ask("/api/lookup", {"text": text, "head": 0}, LookupRequest,  # chapter 5's one line
            lambda r, b, c: lookup(r, b.text, b.model, b.head, c)),
        Ask("/api/scaling", {"text": text}, ScalingRequest,  # chapter 7
            lambda r, b, c: scaling(r, b.text, b.model, tuple(b.d_k) if b.d_k else None, b.keys, c)),
        Ask("/api/order", {"text": text, "seed": defaults.SEED}, OrderRequest,  # chapter 8
            lambda r, b, c: order(r, b.text, b.model, b.permutation, b.seed, b.layer, b.max_position, c)),
    ]
    if with_heads is not None:
        asks += [
            Ask("/api/heads", {"text": text, "model": with_heads.name, "heads_off": []},
                HeadsRequest,  # chapter 9
                lambda r, b, c: heads(r, b.text, b.model, tuple((h.kind, h.layer, h.head) for h in b.heads_off),
                                      b.reference, c)),
            *(Ask("/api/translate", {"text": text, "model": with_heads.name, "sublayers_off": off},
                  TranslateRequest,  # chapter 9's room to think
                  lambda r, b, c: translation(r, b.model, b.text,
                                              DecodeOptions(sublayers_off=tuple(b.sublayers_off)), c))
              for off in ([], ["feed_forward"], ["residual_attention"], ["residual_feed_forward"])),
            Ask("/api/predict", {"text": text, "model": with_heads.name, "prefix": [], "top_k": defaults.TOP_K,
                                 "beam_size": 1}, PredictRequest,  # chapter 10
                lambda r, b, c: prediction(r, b.text, b.model, tuple(b.prefix), b.top_k, b.beam_size, c)),
            Ask("/api/next-token", {"text": text}, NextTokenRequest,  # chapter 10's free labels
                lambda r, b, c: next_token(r, b.text, b.model, b.reference, c)),
        ]
    return [*asks, Ask("/api/recap", {"text": text}, TextRequest,  # chapter 11
                       lambda r, b, c: recap(r, b.text, c))]


def answer_all(registry: ModelRegistry, asks: list[Ask], stopped: threading.Event | None = None) -> int:
    """Answer each in turn until `stopped` is set (the server is shutting down: the answer being
    computed is dropped at its next check); returns how many were answered (a failure is logged,
    not raised)."""
    answered = 0
    for ask in asks:
        if stopped is not None and stopped.is_set():
            break
        try:
            ask.answer(registry, stopped)
            answered += 1
        except (Abandoned, Stopped):
            break  # stopped while waiting for, or during, its turn
        except Exception as error:  # noqa: BLE001 - ahead-of-time work must never stop the server
            if stopped is None or not stopped.is_set():  # the model thread closing: not a failure
                log.warning("computing %s ahead failed: %s", ask.path, error)
    return answered


class Ahead(threading.Thread):
    """The default sentence's answers computed on a thread of its own; `stop()` before the registry
    closes ends it at the answer being computed."""

    def __init__(self, registry: ModelRegistry):
        super().__init__(name="ahead", daemon=True)
        self.registry = registry
        self.stopped = threading.Event()
        self.answered: int | None = None  # set when done

    def run(self) -> None:
        began = time.perf_counter()
        asks = first_visit(self.registry)
        self.answered = answer_all(self.registry, asks, self.stopped)
        log.info("default sentence: %d of %d answers computed ahead in %.1f s", self.answered, len(asks),
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
