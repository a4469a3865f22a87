"""Loading at start-up: the tokenizer and every model's checkpoint folder, served as this device
serves them (models/serving), into a ModelRegistry. A checkpoint that is missing or corrupt is
recorded with its reason instead of stopping the server, so the other models keep serving and
GET /api/health says what is wrong."""

from __future__ import annotations

import gc
import logging
from pathlib import Path
from typing import Any

import torch

from app.limits import Limits
from app.runtime.cache import ResultCache
from app.runtime.jobs import Jobs
from app.runtime.model_thread import ModelThread
from app.runtime.registry import LoadedModel, ModelRegistry
from models import checkpoint, snapshots
from models.architectures import MODEL_NAMES, count_parameters, describe
from models.device import choose_device
from models.probes.gradients import load_forward_mode
from models.serving import on_device, served
from models.serving.options import LAYOUT, PLAIN, PRECISION, STEP
from models.tokenizer import BPETokenizer

log = logging.getLogger("attention_lab")
TOKENIZER_FILE = "tokenizer.json"  # in the checkpoints folder, shared by every model


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
    sublayers = _read_or(checkpoint.read_sublayers, folder, [])
    return LoadedModel(name, model, describe(model.config), count_parameters(model), metrics, curve, seed,
                       kept_point(meta.get("progress")), folder, snapshot_steps(folder, meta), sublayers,
                       recipe(meta))


def snapshot_steps(folder: Path, meta: dict) -> list[dict[str, Any]]:
    """The index of the model's training snapshots, or [] when it has none or they belong to
    another run than the shipped weights (their recorded initialization differs)."""
    index = _read_or(snapshots.read_index, folder, {"steps": []})
    if index.get(checkpoint.INITIAL_SHA256) != meta.get(checkpoint.INITIAL_SHA256):
        log.warning("%s: snapshots of another training run left out", folder.name)
        return []
    return [s for s in index.get("steps", []) if isinstance(s, dict) and isinstance(s.get("step"), int)]


def kept_point(progress) -> dict[str, Any] | None:
    """Where training kept the checkpoint (the training chapter): the evaluation whose validation BLEU (then
    loss) was the best so far, as config.json's "progress" records it; None without a record (a
    checkpoint saved outside models.train)."""
    if not isinstance(progress, dict) or not isinstance(progress.get("step"), int):
        return None
    return {"step": progress["step"], "seconds": progress.get("training_seconds"),
            "epoch": progress.get("epoch"), "valid_bleu": progress.get("valid_bleu"),
            "valid_loss": progress.get("valid_loss")}


def recipe(meta: dict) -> dict[str, Any] | None:
    """What differed in how the models were trained (chapter 1): the learning rate, the label
    smoothing, and how many evaluations' weights the shipped ones average (1: none averaged), as
    config.json records them; None without a record."""
    training, progress = meta.get("training"), meta.get("progress")
    if not isinstance(training, dict) or not isinstance(training.get("lr"), (int, float)):
        return None
    averaged = progress.get("averaged_steps") if isinstance(progress, dict) else None
    return {"learning_rate": training["lr"], "label_smoothing": training.get("label_smoothing", 0.0),
            "averaged": len(averaged) if isinstance(averaged, list) and averaged else 1}


def _read_or(read, folder: Path, default):
    """The evaluation and the training log are extras: a broken file blanks them, not the model."""
    try:
        return read(folder)
    except ValueError as error:  # json.JSONDecodeError is a ValueError
        log.warning("%s: %s unreadable (%s)", folder.name, read.__name__, error)
        return default


def load_registry(
    checkpoints: Path, names: tuple[str, ...] | None = None, device: str = "auto",
    cache_size: int = 256, cache_mb: int = 64, limits: Limits | None = None, thread: ModelThread | None = None,
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
    thread = thread or ModelThread()
    names = model_folders(checkpoints) if names is None else names
    # an unknown name stops start-up here, before any model loads
    layout, precision, step = on_device(layout, precision, step, dev)
    loaded, unavailable = thread.run(load_models, checkpoints, names, dev, layout, precision, step)
    # torch's lazy first-use set-up, done before any request can race it
    thread.run(load_forward_mode, [e.model for e in loaded.values() if e.capabilities.recurrent])
    cache = ResultCache(cache_size, cache_mb * 2**20)
    return ModelRegistry(tokenizer, dev, loaded, unavailable, Jobs(thread, cache), limits or Limits(),
                         root=checkpoints, layout=layout, precision=precision, step=step)


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


def freeze_start_up_heap() -> None:
    """Leave what start-up built (the models' modules, the tokenizer's vocabulary, the catalogues,
    the app's schemas: objects that live as long as the process) out of every later garbage
    collection. CPython's full collections walk every tracked object while holding the GIL: under
    load they stopped the event loop, or a stepper process's model thread, for a tenth of a second
    or more at a time, and every answer waited, health's included (bench/README.md, readers.py)."""
    gc.collect()
    gc.freeze()
