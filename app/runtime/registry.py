"""The loaded models: read once at start-up (app/runtime/loading.py), then only read (never
written) by requests; each request's work goes to the model thread through here, answered from the
result cache when it can be.
"""

from __future__ import annotations

import functools
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from torch import nn

from app.limits import Limits
from app.runtime.errors import UnknownModelError
from app.runtime.jobs import Jobs
from app.runtime.text import Source, source_of
from app.runtime.trained_states import TrainedStates
from app.schemas.catalog import SnapshotPoint
from models import snapshots
from models.architectures import Capabilities
from models.serving.options import PLAIN
from models.tokenizer import BPETokenizer

log = logging.getLogger("attention_lab")
SOURCES_KEPT = 1024  # texts whose pieces are kept (a few hundred bytes each)


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
    sublayers: list[dict[str, Any]] = field(default_factory=list)  # sublayers.json's variants ([]: not scored)
    recipe: dict[str, Any] | None = None  # how it was trained (config.json's training and progress)

    def timeline(self) -> list[SnapshotPoint]:
        """Training as the scrubber walks it: the seeded initialization, the stored snapshots, then
        the shipped weights; [] for a model trained without snapshots."""
        if not self.snapshots or self.kept is None:
            return []
        points = []
        for point in self.snapshots:
            weights = "snapshot" if "file" in point else "initialized"
            points.append(SnapshotPoint(**snapshots.curve_fields(point), weights=weights,
                                        precision=point.get("precision", "fp32")))
        return [*points, SnapshotPoint(**self.kept, weights="shipped", precision="fp16")]


@dataclass
class ModelRegistry:
    """The catalogue: the loaded models and what a request needs around them (tokenizer, limits);
    their work goes through `jobs`, other points of their training come from `states`."""

    tokenizer: BPETokenizer
    device: torch.device
    models: dict[str, LoadedModel]  # the story's order, then any other checkpoint folder
    unavailable: dict[str, str] = field(default_factory=dict)  # name -> why it did not load
    jobs: Jobs = field(default_factory=Jobs)  # every model call, through the cache and the model thread
    limits: Limits = field(default_factory=Limits)
    root: Path | None = None  # the checkpoints folder: experiments' own small checkpoints live below it
    experiments: dict[Any, Any] = field(default_factory=dict)  # their models, loaded on first use
    # how the models are served on this device (models/serving): the weights' layout in memory,
    # whether they also have fp16 copies for their products, how a Transformer runs its decoding steps
    layout: str = PLAIN[0]
    precision: str = PLAIN[1]
    step: str = PLAIN[2]
    states: TrainedStates = field(init=False)  # the models at other points of their training

    def __post_init__(self) -> None:
        self.states = TrainedStates(self)
        # a text is asked about again and again: by each model of one request, and by the same
        # reader's next requests (the page's chapters, a pause in typing); split it once
        self._sources = functools.lru_cache(maxsize=SOURCES_KEPT)(functools.partial(source_of, self.tokenizer))

    def source(self, text: str) -> Source:
        """The checked, normalised text and its pieces, within this server's limit (InvalidTextError).
        Shared between callers: read it, never change it."""
        return self._sources(text, self.limits.max_chars)

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
        """Stop the stepper processes and the model thread; queued work that has not started is dropped."""
        self.jobs.close()

    def __enter__(self) -> ModelRegistry:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
