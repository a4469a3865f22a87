"""The loaded models: read once at start-up, then only read (never written) by requests.

A checkpoint that is missing or corrupt is recorded with its reason instead of stopping the
server, so the other models keep serving and /api/health says what is wrong.
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

from app.services.cache import MISSING, ResultCache
from app.services.text import Source, source_of
from app.services.worker import ModelThread
from models import checkpoint, snapshots
from models.architectures import MODEL_NAMES, Capabilities, count_parameters, describe, initialized
from models.device import choose_device
from models.probes.gradients import load_forward_mode
from models.serving import on_device, served
from models.serving.options import LAYOUT, PLAIN, PRECISION, STEP
from models.tokenizer import BPETokenizer

log = logging.getLogger("attention_lab")
TOKENIZER_FILE = "tokenizer.json"
SNAPSHOTS_KEPT = 2  # training snapshots held in memory at once (each is a whole model)


class UnknownModelError(LookupError):
    """A model name that is not loaded; the message lists the names that are."""


class UnknownSnapshotError(LookupError):
    """A model without training snapshots, or a step it has none at; the message lists the steps."""


@dataclass(frozen=True)
class Limits:
    """The bounds of one request, told to clients by GET /api/health."""

    max_chars: int = 500  # input text, after trimming and after normalisation
    max_target_tokens: int = 128  # output pieces: bounds the work when a model does not stop
    max_gradient_length: int = 200  # pieces of the repeated input of the gradient experiment


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


def load_model(folder: Path, name: str, device: torch.device, layout: str = PLAIN[0],
               precision: str = PLAIN[1], step: str = PLAIN[2]) -> LoadedModel:
    if not folder.is_dir():
        raise checkpoint.CheckpointError(f"no checkpoint: the folder {folder.name}/ is missing")
    model = checkpoint.load(folder, device)  # checks the weights' sha256 and that they are finite
    for p in model.parameters():
        p.requires_grad_(False)  # requests never train; /api/gradients differentiates inputs only
    model = served(model, layout, precision, step)
    metrics = _read_or(checkpoint.read_metrics, folder, {})
    curve = _read_or(checkpoint.read_curve, folder, [])
    meta = checkpoint.read_meta(folder)
    seed = meta.get("training", {}).get("seed", 0)
    return LoadedModel(name, model, describe(model.config), count_parameters(model), metrics, curve, seed,
                       kept_point(meta.get("progress")), folder, snapshot_steps(folder, meta))


def snapshot_steps(folder: Path, meta: dict) -> list[dict[str, Any]]:
    """The index of the model's training snapshots, or [] when it has none or they belong to
    another run than the shipped weights (their recorded initialization differs)."""
    index = _read_or(snapshots.read_index, folder, {"steps": []})
    if index.get(checkpoint.INITIAL_SHA256) != meta.get(checkpoint.INITIAL_SHA256):
        log.warning("%s: snapshots of another training run left out", folder.name)
        return []
    return [s for s in index.get("steps", []) if isinstance(s, dict) and isinstance(s.get("step"), int)]


def kept_point(progress) -> dict[str, Any] | None:
    """Where training kept the checkpoint (chapter 1): the evaluation whose validation BLEU (then
    loss) was the best so far, as config.json's "progress" records it; None without a record (a
    checkpoint saved outside models.train)."""
    if not isinstance(progress, dict) or not isinstance(progress.get("step"), int):
        return None
    return {"step": progress["step"], "seconds": progress.get("training_seconds"),
            "epoch": progress.get("epoch"), "valid_bleu": progress.get("valid_bleu"),
            "valid_loss": progress.get("valid_loss")}


def _read_or(read, folder: Path, default):
    """The evaluation and the training log are extras: a broken file blanks them, not the model."""
    try:
        return read(folder)
    except ValueError as error:  # json.JSONDecodeError is a ValueError
        log.warning("%s: %s unreadable (%s)", folder.name, read.__name__, error)
        return default


def load_registry(
    checkpoints: Path, names: tuple[str, ...] | None = None, device: str = "auto",
    cache_size: int = 256, cache_mb: int = 64, limits: Limits = Limits(), worker: ModelThread | None = None,
    layout: str = LAYOUT, precision: str = PRECISION, step: str = STEP,
) -> ModelRegistry:
    """Load the tokenizer (required: without it no model can read text) and every model in
    `names` that loads, on the model thread that will run them. names None: the story's five,
    then every other folder of `checkpoints` that holds a model. `layout`, `precision` and `step`:
    how the models are served (models/serving: the weights' order in memory, fp16 copies for their
    products, a Transformer's decoding step recorded as a graph), as far as the device allows."""
    if not (checkpoints / TOKENIZER_FILE).exists():
        raise FileNotFoundError(f"no {TOKENIZER_FILE} in {checkpoints} (set ATTENTION_LAB_CHECKPOINTS)")
    tokenizer = BPETokenizer.load(checkpoints / TOKENIZER_FILE)
    dev = choose_device(device)
    worker = worker or ModelThread()
    names = model_folders(checkpoints) if names is None else names
    # an unknown name stops start-up here, before any model loads
    layout, precision, step = on_device(layout, precision, step, dev)
    loaded, unavailable = worker.run(load_models, checkpoints, names, dev, layout, precision, step)
    # torch's lazy first-use set-up, done before any request can race it
    worker.run(load_forward_mode, [e.model for e in loaded.values() if e.capabilities.recurrent])
    cache = ResultCache(cache_size, cache_mb * 2**20)
    return ModelRegistry(tokenizer, dev, loaded, unavailable, cache, limits, worker, root=checkpoints,
                         layout=layout, precision=precision, step=step)


def model_folders(checkpoints: Path) -> tuple[str, ...]:
    """The story's models (listed even when missing, so health says so), then any other folder
    with a config.json: a new model needs its folder and nothing else."""
    others = sorted(p.parent.name for p in checkpoints.glob(f"*/{checkpoint.CONFIG}"))
    return MODEL_NAMES + tuple(n for n in others if n not in MODEL_NAMES)


def load_models(checkpoints: Path, names: tuple[str, ...], device: torch.device, layout: str = PLAIN[0],
                precision: str = PLAIN[1], step: str = PLAIN[2]):
    """(name -> LoadedModel, name -> why it did not load)."""
    loaded, unavailable = {}, {}
    for name in names:
        try:
            loaded[name] = load_model(checkpoints / name, name, device, layout, precision, step)
        except Exception as error:  # any failure to read a checkpoint only disables that model
            unavailable[name] = f"{type(error).__name__}: {error}"
            log.warning("model %s not loaded: %s", name, unavailable[name])
    log.info("loaded %s on %s", ", ".join(loaded) or "no models", device)
    return loaded, unavailable
