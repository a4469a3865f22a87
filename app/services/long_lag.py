"""GET /api/long-lag and POST /api/long-lag/gradients as functions: the gradients chapter's learning
experiment (models/long_lag.py). Its results ship as checkpoints/long-lag/results.json with one
tiny checkpoint per (cell, lag); the gradient curves of those tiny models are measured live."""

from __future__ import annotations

import threading
from pathlib import Path

from app.runtime.errors import InvalidOptionError, NoResultsError, UnknownModelError
from app.runtime.registry import ModelRegistry
from app.runtime.shares import Meter
from app.schemas.gradients import GradientCurve
from app.schemas.long_lag import LagGradients, LagRun, LagTask, LongLagResults
from app.services.gradients import DEFINITION
from app.services.rounding import round_sig
from models import checkpoint, long_lag
from models.probes.gradients import jacobian_norms

FOLDER = "long-lag"


def results(registry: ModelRegistry) -> LongLagResults:
    """results.json as trained, with the task described and the lag each cell falls to chance."""
    data = checkpoint.read_json(_folder(registry) / long_lag.RESULTS)
    if not data:
        raise NoResultsError("no long-lag results: run python -m models.long_lag")
    task = LagTask(symbols=long_lag.SYMBOLS, noise_tokens=long_lag.NOISE, d_embed=long_lag.LagConfig.d_embed,
                   d_hidden=long_lag.LagConfig.d_hidden)
    runs = sorted(data["runs"], key=lambda r: (r["filler"], r["cell"], r["lag"]))
    fillers = sorted({r["filler"] for r in runs})
    chance = {f: {c: long_lag.chance_lag(data, f, c) for c in long_lag.CELLS} for f in fillers}
    return LongLagResults(**{**data, "runs": [LagRun(**r) for r in runs], "task": task,
                             "cells": list(long_lag.CELLS), "chance_lag": chance})


def lag_gradients(registry: ModelRegistry, lag: int, filler: str = "blank", initialized: bool = True,
                  cancel: threading.Event | None = None, meter: Meter | None = None) -> LagGradients:
    """The gradient curves of every cell's tiny model trained at `lag` with `filler` (and, with
    `initialized`, of the same model before training), on one fixed task sequence of that lag."""
    runs = [r for r in results(registry).runs if r.filler == filler]
    cells = [c for c in long_lag.CELLS if any(r.cell == c and r.lag == lag for r in runs)]
    if not cells:
        trained = sorted({r.lag for r in runs})
        raise InvalidOptionError("lag", f"no {filler!r} model was trained at lag {lag}; lags: {trained}")
    ids = long_lag.example(lag, filler)

    def compute() -> LagGradients:
        curves = []
        for cell in cells:
            trained = _model(registry, filler, cell, lag)
            models = {"trained": trained}
            if initialized:
                untrained = long_lag.initialized(trained.config, seed=0).to(registry.device)
                models["initialized"] = untrained.eval().requires_grad_(False)
            for weights, model in models.items():
                norms = jacobian_norms(model, ids).inputs
                curves.append(GradientCurve(model=cell, weights=weights, distance=list(range(len(ids))),
                                            norm=round_sig(norms)))
        return LagGradients(lag=lag, filler=filler, tokens=ids, definition=DEFINITION, curves=curves)

    return registry.jobs.result(("long-lag", filler, lag, initialized), compute, cancel, meter=meter)


def _folder(registry: ModelRegistry) -> Path:
    if registry.root is None:
        raise UnknownModelError("the server was started without a checkpoints folder")
    return registry.root / FOLDER


def _model(registry: ModelRegistry, filler: str, cell: str, lag: int):
    """A tiny long-lag model, loaded on first use (on the model thread) and kept: each is ~50 kB."""
    key = ("long-lag", filler, cell, lag)
    if key not in registry.experiments:
        model = long_lag.load(_folder(registry) / long_lag.run_name(filler, cell, lag)).to(registry.device)
        registry.experiments[key] = model.requires_grad_(False)
    return registry.experiments[key]
