"""The loaded models: read once at start-up, then only read (never written) by requests.

A checkpoint that is missing or corrupt is recorded with its reason instead of stopping the
server, so the other models keep serving and /api/health says what is wrong.
"""

from __future__ import annotations

import logging
import threading
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from torch import nn

from app.services.cache import MISSING, ResultCache
from app.services.worker import ModelThread
from models import checkpoint
from models.architectures import MODEL_NAMES, count_parameters, describe
from models.device import choose_device
from models.tokenizer import BPETokenizer

log = logging.getLogger("attention_lab")
TOKENIZER_FILE = "tokenizer.json"


class UnknownModelError(LookupError):
    """A model name that is not loaded; the message lists the names that are."""


@dataclass(frozen=True)
class LoadedModel:
    name: str
    model: nn.Module  # eval mode, on the registry's device
    info: dict[str, Any]  # architecture, attention, layers, heads, parameters
    metrics: dict[str, Any]  # metrics.json ({} when the model was not evaluated yet)
    curve: list[dict[str, Any]]  # curve.json: the training log


@dataclass
class ModelRegistry:
    tokenizer: BPETokenizer
    device: torch.device
    models: dict[str, LoadedModel]  # in MODEL_NAMES order
    unavailable: dict[str, str] = field(default_factory=dict)  # name -> why it did not load
    cache: ResultCache = field(default_factory=lambda: ResultCache(256))
    max_chars: int = 500  # input limit, after trimming and after normalisation
    max_target_tokens: int = 128  # output limit: bounds the work when a model does not stop
    worker: ModelThread = field(default_factory=ModelThread)  # runs every model call

    def result(self, key, compute, cancel: threading.Event | None = None):
        """The cached answer for `key`, else `compute()` run on the model thread and cached. The
        cache is asked again there: an identical request queued behind the one that computed it
        (live typing asks twice for the same text) gets the answer without computing it again.
        `cancel` set before its turn: nothing is computed (worker.Abandoned)."""
        return self.submit(key, compute, cancel).result()

    def submit(self, key, compute, cancel: threading.Event | None = None) -> Future:
        """Like `result`, without waiting: a Future, already done when the cache had the answer."""
        value = self.cache.get(key)
        if value is MISSING:
            return self.worker.submit(self.cache.get_or_compute, key, compute, cancel=cancel)
        done: Future = Future()
        done.set_result(value)
        return done

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


def load_model(folder: Path, name: str, device: torch.device) -> LoadedModel:
    if not (folder / checkpoint.WEIGHTS).exists():
        raise FileNotFoundError(f"no checkpoint at {folder / checkpoint.WEIGHTS}")
    model = checkpoint.load(folder, device)
    for p in model.parameters():
        p.requires_grad_(False)  # requests never train; /api/gradients differentiates inputs only
    info = {**describe(model.config), "parameters": count_parameters(model)}
    return LoadedModel(name, model, info, _read_or(checkpoint.read_metrics, folder, {}),
                       _read_or(checkpoint.read_curve, folder, []))


def _read_or(read, folder: Path, default):
    """The evaluation and the training log are extras: a broken file blanks them, not the model."""
    try:
        return read(folder)
    except ValueError as error:  # json.JSONDecodeError is a ValueError
        log.warning("%s: %s unreadable (%s)", folder.name, read.__name__, error)
        return default


def load_registry(
    checkpoints: Path, names: tuple[str, ...] = MODEL_NAMES, device: str = "auto",
    cache_size: int = 256, max_chars: int = 500, max_target_tokens: int = 128, cache_mb: int = 64,
    worker: ModelThread | None = None,
) -> ModelRegistry:
    """Load the tokenizer (required: without it no model can read text) and every model in
    `names` that loads, on the model thread that will run them."""
    if not (checkpoints / TOKENIZER_FILE).exists():
        raise FileNotFoundError(f"no {TOKENIZER_FILE} in {checkpoints} (set ATTENTION_LAB_CHECKPOINTS)")
    tokenizer = BPETokenizer.load(checkpoints / TOKENIZER_FILE)
    dev = choose_device(device)
    worker = worker or ModelThread()
    loaded, unavailable = worker.run(load_models, checkpoints, names, dev)
    cache = ResultCache(cache_size, cache_mb * 2**20)
    return ModelRegistry(tokenizer, dev, loaded, unavailable, cache, max_chars, max_target_tokens, worker)


def load_models(checkpoints: Path, names: tuple[str, ...], device: torch.device):
    """(name -> LoadedModel, name -> why it did not load)."""
    loaded, unavailable = {}, {}
    for name in names:
        try:
            loaded[name] = load_model(checkpoints / name, name, device)
        except Exception as error:  # any failure to read a checkpoint only disables that model
            unavailable[name] = f"{type(error).__name__}: {error}"
            log.warning("model %s not loaded: %s", name, unavailable[name])
    log.info("loaded %s on %s", ", ".join(loaded) or "no models", device)
    return loaded, unavailable
