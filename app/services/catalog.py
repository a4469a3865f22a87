"""What the server knows about its models without running them: health and limits, what each
model has inside, metrics, curves. The page builds itself from these: no model name is written
into the front end."""

from __future__ import annotations

from dataclasses import asdict

from app.services.registry import ModelRegistry
from models import checkpoint


def health(registry: ModelRegistry) -> dict:
    """"ok" while at least one model serves; the models that did not load are listed with why."""
    return {
        "status": "ok" if registry.models else "degraded",
        "device": registry.device.type,
        "models": registry.names,
        "unavailable": dict(registry.unavailable),
        "limits": asdict(registry.limits),
    }


def model_infos(registry: ModelRegistry) -> list[dict]:
    return [
        {"name": entry.name, **asdict(entry.capabilities),
         "cross_attention": entry.capabilities.cross_attention, "parameters": entry.parameters,
         "metrics": entry.metrics, "curve_points": len(entry.curve), "kept": kept_point(registry, entry.name)}
        for entry in registry.models.values()
    ]


def kept_point(registry: ModelRegistry, name: str) -> dict | None:
    """Where training kept the checkpoint (chapter 1): the evaluation whose validation BLEU (then
    loss) was the best so far, as config.json's "progress" records it; None when there is no
    record (a checkpoint saved outside models.train) or it cannot be read. Read at each request:
    five small files, and no copy to keep in step."""
    if registry.root is None:
        return None
    try:
        progress = checkpoint.read_meta(registry.root / name).get("progress")
    except (OSError, ValueError):  # json.JSONDecodeError is a ValueError
        return None
    if not isinstance(progress, dict) or not isinstance(progress.get("step"), int):
        return None
    return {"step": progress["step"], "seconds": progress.get("training_seconds"),
            "epoch": progress.get("epoch"), "valid_bleu": progress.get("valid_bleu"),
            "valid_loss": progress.get("valid_loss")}


def training_curve(registry: ModelRegistry, name: str) -> dict:
    return {"model": name, "points": registry.get(name).curve}
