"""The models at other points of their training (chapters 5 and 9's replays): the seeded
initialization, rebuilt exactly from the config; the stored snapshots, loaded on demand and kept a
few at a time; and the shipped weights. Each is served as the registry serves its models."""

from __future__ import annotations

from collections import OrderedDict
from typing import Any, Protocol

import torch
from torch import nn

from app.runtime.errors import UnknownSnapshotError
from app.schemas.catalog import SnapshotPoint
from models import snapshots
from models.architectures import initialized
from models.serving import served


class Models(Protocol):
    """What the trained states read of the registry that owns them (app/runtime/registry.py), named
    here so that this module does not import the registry that imports it."""

    device: torch.device
    layout: str
    precision: str
    step: str

    def get(self, name: str) -> Any: ...


SNAPSHOTS_KEPT = 2  # training snapshots held in memory at once (each is a whole model)


class TrainedStates:
    def __init__(self, registry: Models):
        self.registry = registry
        self.untrained: dict[str, nn.Module] = {}  # see `initialized`
        self.snapshot_models: OrderedDict = OrderedDict()  # (name, step) -> model, LRU

    def get(self, name: str):
        return self.registry.get(name)

    def _served(self, model: nn.Module) -> nn.Module:
        r = self.registry
        return served(model.requires_grad_(False), r.layout, r.precision, r.step)

    def initialized(self, name: str) -> nn.Module:
        """Model `name`'s architecture at its seeded initialization, as training started it: rebuilt
        from the config on first use (nothing is shipped for it), frozen like the trained one.
        Call it from the model thread, like any model work."""
        if name not in self.untrained:
            entry = self.get(name)
            model = initialized(entry.model.config, entry.seed).to(self.registry.device).eval()
            self.untrained[name] = self._served(model)
        return self.untrained[name]

    def snapshot_point(self, name: str, step: int) -> SnapshotPoint:
        """Model `name`'s timeline point at training step `step` (UnknownSnapshotError if none)."""
        timeline = self.get(name).timeline()
        for point in timeline:
            if point.step == step:
                return point
        if not timeline:
            raise UnknownSnapshotError(f"model {name!r} was trained without snapshots")
        steps = ", ".join(str(p.step) for p in timeline)
        raise UnknownSnapshotError(f"model {name!r} has no snapshot at step {step}; steps: {steps}")

    def at_step(self, name: str, step: int) -> nn.Module:
        """Model `name` with its weights at training step `step`: the seeded initialization, a
        stored snapshot (loaded on demand, at most SNAPSHOTS_KEPT held) or the shipped weights.
        Call it from the model thread, like any model work."""
        point = self.snapshot_point(name, step)
        if point.weights == "shipped":
            return self.get(name).model
        if point.weights == "initialized":
            return self.initialized(name)
        key = (name, step)
        if key not in self.snapshot_models:
            model = snapshots.load_snapshot(self.get(name).folder, step).to(self.registry.device)
            self.snapshot_models[key] = self._served(model)
            while len(self.snapshot_models) > SNAPSHOTS_KEPT:
                self.snapshot_models.popitem(last=False)
        self.snapshot_models.move_to_end(key)
        return self.snapshot_models[key]
