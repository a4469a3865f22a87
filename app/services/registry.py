"""The loaded models: read once at start-up (app/services/loading.py), then only read (never
written) by requests; each request's work goes to the model thread through here, answered from the
result cache when it can be.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections import OrderedDict
from concurrent.futures import Future
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import torch
from torch import nn

from app.limits import Limits
from app.services.cache import MISSING, ResultCache
from app.services.text import Source, source_of
from app.services.worker import ModelThread
from models import snapshots
from models.architectures import Capabilities, initialized
from models.serving import served
from models.serving.options import PLAIN
from models.tokenizer import BPETokenizer

log = logging.getLogger("attention_lab")
TOKENIZER_FILE = "tokenizer.json"
SNAPSHOTS_KEPT = 2  # training snapshots held in memory at once (each is a whole model)


class UnknownModelError(LookupError):
    """A model name that is not loaded; the message lists the names that are."""


class UnknownSnapshotError(LookupError):
    """A model without training snapshots, or a step it has none at; the message lists the steps."""


@dataclass(frozen=True)
class LoadedModel:
    name: str
    model: nn.Module  # eval mode, on the registry's device
    capabilities: Capabilities  # what it has inside: which experiments apply
    parameters: int
    metrics: dict[str, Any]  # metrics.json ({} when the model was not evaluated yet)
    curve: list[dict[str, Any]]  # curve.json: the training log
    seed: int = 0  # the training seed: with the config it rebuilds the untrained model
    kept: dict[str, Any] | None = None  # where training kept these weights (config.json's progress)
    folder: Path | None = None  # its checkpoint folder
    snapshots: list[dict[str, Any]] = field(default_factory=list)  # snapshots/index.json's steps (step 0 first)

    def timeline(self) -> list[dict[str, Any]]:
        """Training as the scrubber walks it: the seeded initialization, the stored snapshots, then
        the shipped weights; [] for a model trained without snapshots."""
        if not self.snapshots or self.kept is None:
            return []
        points = []
        for point in self.snapshots:
            weights = "snapshot" if "file" in point else "initialized"
            points.append({**snapshots.curve_fields(point), "weights": weights,
                           "precision": point.get("precision", "fp32")})
        return [*points, {**self.kept, "weights": "shipped", "precision": "fp16"}]


@dataclass
class ModelRegistry:
    tokenizer: BPETokenizer
    device: torch.device
    models: dict[str, LoadedModel]  # the story's order, then any other checkpoint folder
    unavailable: dict[str, str] = field(default_factory=dict)  # name -> why it did not load
    cache: ResultCache = field(default_factory=lambda: ResultCache(256))
    limits: Limits = field(default_factory=Limits)
    worker: ModelThread = field(default_factory=ModelThread)  # runs every model call
    untrained: dict[str, nn.Module] = field(default_factory=dict)  # see `initialized`
    root: Path | None = None  # the checkpoints folder: experiments' own small checkpoints live below it
    experiments: dict[Any, Any] = field(default_factory=dict)  # their models, loaded on first use
    snapshot_models: OrderedDict = field(default_factory=OrderedDict)  # (name, step) -> model, LRU
    # how the models are served on this device (models/serving): the weights' layout in memory,
    # whether they also have fp16 copies for their products, how a Transformer runs its decoding steps
    layout: str = PLAIN[0]
    precision: str = PLAIN[1]
    step: str = PLAIN[2]
    # name -> seconds per source piece that its batch jobs took lately (a running mean): what
    # submit_together orders a batch by. Per piece, because a batch's models share one text, while
    # the text of each model's last job was any length (live typing: every prefix, most aborted).
    seconds: dict[str, float] = field(default_factory=dict)

    def result(self, key, compute, cancel: threading.Event | None = None):
        """The cached answer for `key`, else `compute()` run on the model thread and cached. The
        cache is asked again there: an identical request queued behind the one that computed it
        (live typing asks twice for the same text) gets the answer without computing it again.
        `cancel` set before its turn: nothing is computed (worker.Abandoned)."""
        return self.submit(key, compute, cancel).result()

    async def answer(self, key, compute, cancel: threading.Event | None = None):
        """`result` for a coroutine: the event loop waits for the model thread without holding a
        thread of its own (a sync route costs two hand-overs to the thread pool and back)."""
        return await asyncio.wrap_future(self.submit(key, compute, cancel))

    def submit(self, key, compute, cancel: threading.Event | None = None) -> Future:
        """Like `result`, without waiting: a Future, already done when the cache had the answer."""
        value = self.cache.get(key)
        if value is MISSING:
            return self.worker.submit(self.cache.get_or_compute, key, compute, cancel=cancel)
        done: Future = Future()
        done.set_result(value)
        return done

    def submit_together(self, items: list[tuple[str, Any, Any]], cancel: threading.Event | None = None,
                        pieces: int = 1) -> list[Future]:
        """Like `submit` for several (model name, key, compute) of independent work that only reads
        the loaded models, all on one text of `pieces` source pieces: the ones not cached run as one
        batch on every core (worker.run_together), the slowest per piece lately first (longest
        first keeps the lanes evenly busy)."""
        futures: list[Future | None] = []
        todo, names = [], []
        for name, key, compute in items:
            value = self.cache.get(key)
            if value is MISSING:
                futures.append(None)
                timed = partial(self._timed, name, pieces, compute)
                todo.append(partial(self.cache.get_or_compute, key, timed))
                names.append(name)
            else:
                futures.append(Future())
                futures[-1].set_result(value)
        start = sorted(range(len(todo)), key=lambda i: -self.seconds.get(names[i], 0.0))
        queued = iter(self.worker.run_together(todo, cancel, start) if todo else [])
        return [future or next(queued) for future in futures]

    def _timed(self, name: str, pieces: int, compute):
        """compute(), timed into `seconds` (only when it runs: an answer from the cache is no time)."""
        began = time.perf_counter()
        value = compute()
        rate = (time.perf_counter() - began) / max(pieces, 1)
        before = self.seconds.get(name)
        self.seconds[name] = rate if before is None else (before + rate) / 2
        return value

    def initialized(self, name: str) -> nn.Module:
        """Model `name`'s architecture at its seeded initialization, as training started it: rebuilt
        from the config on first use (nothing is shipped for it), frozen like the trained one.
        Call it from the model thread, like any model work."""
        if name not in self.untrained:
            entry = self.get(name)
            model = initialized(entry.model.config, entry.seed).to(self.device).eval()
            self.untrained[name] = served(model.requires_grad_(False), self.layout, self.precision, self.step)
        return self.untrained[name]

    def snapshot_point(self, name: str, step: int) -> dict[str, Any]:
        """Model `name`'s timeline point at training step `step` (UnknownSnapshotError if none)."""
        timeline = self.get(name).timeline()
        for point in timeline:
            if point["step"] == step:
                return point
        if not timeline:
            raise UnknownSnapshotError(f"model {name!r} was trained without snapshots")
        steps = ", ".join(str(p["step"]) for p in timeline)
        raise UnknownSnapshotError(f"model {name!r} has no snapshot at step {step}; steps: {steps}")

    def at_step(self, name: str, step: int) -> nn.Module:
        """Model `name` with its weights at training step `step`: the seeded initialization, a
        stored snapshot (loaded on demand, at most SNAPSHOTS_KEPT held) or the shipped weights.
        Call it from the model thread, like any model work."""
        point = self.snapshot_point(name, step)
        if point["weights"] == "shipped":
            return self.get(name).model
        if point["weights"] == "initialized":
            return self.initialized(name)
        key = (name, step)
        if key not in self.snapshot_models:
            model = snapshots.load_snapshot(self.get(name).folder, step).to(self.device)
            self.snapshot_models[key] = served(model.requires_grad_(False), self.layout, self.precision,
                                               self.step)
            while len(self.snapshot_models) > SNAPSHOTS_KEPT:
                self.snapshot_models.popitem(last=False)
        self.snapshot_models.move_to_end(key)
        return self.snapshot_models[key]

    def source(self, text: str) -> Source:
        """The checked, normalised text and its pieces, within this server's limit (InvalidTextError)."""
        return source_of(self.tokenizer, text, self.limits.max_chars)

    def get(self, name: str) -> LoadedModel:
        if name in self.models:
            return self.models[name]
        valid = ", ".join(self.models) or "none"
        if name in self.unavailable:
            raise UnknownModelError(f"model {name!r} is not loaded ({self.unavailable[name]}); valid: {valid}")
        raise UnknownModelError(f"unknown model {name!r}; valid: {valid}")

    @property
    def names(self) -> list[str]:
        return list(self.models)

    def close(self) -> None:
        """Stop the model thread; queued work that has not started is dropped."""
        self.worker.close()

    def __enter__(self) -> ModelRegistry:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
