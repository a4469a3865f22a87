"""Work done ahead of the reader: at start-up, the answers every chapter asks for on the page's
default sentence are computed once, in the order a reader meets the chapters, so a first visit (or
a shared link such as `/?ch=gradients`) finds them in the result cache.

Each ask is the page's request (its path and body, with the defaults of app/defaults.py) and the
service call its route makes, both declared once by that service (its `PAGE`). The body is read by
the route's own request schema, so its defaults fill in as they do for the page, and the service
builds the same cache key. Nothing goes through
HTTP or the routers: the asks run one after another on a thread of their own, each queued on the
model thread behind every reader's work (app/runtime/jobs.py, `behind_readers`): a reader who arrives
meanwhile goes first, and is never refused for this work (admission does not count it). They start
once the stepper processes are ready, so that a reader who comes at start-up shares the cores with
their loading only, not with this work as well.
"""

from __future__ import annotations

import importlib
import logging
import pkgutil
import threading
import time
from dataclasses import dataclass
from typing import Any

import app.services
from app import chapters, defaults
from app.runtime.errors import Abandoned
from app.runtime.registry import ModelRegistry
from app.services.page import Cancel, PageRequest, Visit
from models.decoding import Stopped

log = logging.getLogger("attention_lab")
# At most this long the work waits for the stepper processes to load (a few seconds on two cores):
# while they load they take the cores, and the readers who come first are stepped on the model thread
STEPPERS_WAIT_S = 60.0


@dataclass(frozen=True)
class Ask:
    """One request of the page's first visit and how its route answers it."""

    request: PageRequest
    body: dict[str, Any]  # the page's JSON body

    @property
    def path(self) -> str:
        return self.request.path

    def answer(self, registry: ModelRegistry, cancel: Cancel = None) -> Any:
        return self.request.answer(registry, self.request.schema.model_validate(self.body), cancel)


def page_requests() -> dict[str, PageRequest]:
    """Path -> the `PAGE` a service module declares (app/services/page.py): a new one is read with
    no edit here."""
    found = {}
    for module in pkgutil.iter_modules(app.services.__path__):
        declared = getattr(importlib.import_module(f"app.services.{module.name}"), "PAGE", None)
        if isinstance(declared, PageRequest):
            found[declared.path] = declared
    return found


def first_visit(registry: ModelRegistry, text: str = defaults.TEXT) -> list[Ask]:
    """What the page asks about `text` with its default settings, in the order of app/chapters.py."""
    models = registry.models.values()
    visit = Visit(
        text=text, models=tuple(m.name for m in models),
        aligning=tuple(m.name for m in models if m.capabilities.recurrent and m.capabilities.cross_attention),
        with_heads=next((m.name for m in models if "encoder" in m.capabilities.attention_kinds), None),
        length=defaults.length(registry.limits.max_gradient_length), seed=defaults.SEED, top_k=defaults.TOP_K)
    declared = page_requests()
    return [Ask(declared[route.path], body) for route in chapters.routes() if route.path in declared
            for body in declared[route.path].bodies(visit)]


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
        steppers = self.registry.jobs.steppers
        if steppers is not None:  # their loading takes the cores: readers who come now go first
            steppers.started(STEPPERS_WAIT_S)
        asks = first_visit(self.registry)
        with self.registry.jobs.behind_readers():
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
