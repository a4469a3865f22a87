"""A checkpoint folder is self-contained and safe to load: no pickle anywhere.

    checkpoints/NAME/model.safetensors   fp16 weights (loaded back as fp32)
    checkpoints/NAME/config.json         architecture, training settings, split and tokenizer hashes
    checkpoints/NAME/metrics.json        evaluation on the test split (models.evaluate)
    checkpoints/NAME/curve.json          the training curve (models.train)
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import torch
from safetensors.torch import load_file, save_file

from models.architectures import build
from models.config import config_from_dict, config_to_dict

WEIGHTS, CONFIG, METRICS, CURVE = "model.safetensors", "config.json", "metrics.json", "curve.json"


def read_json(path: Path, default: Any = None) -> Any:
    return json.loads(path.read_text()) if path.exists() else default


def write_json(path: Path, data: Any) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(data, indent=2, sort_keys=False) + "\n")
    tmp.replace(path)  # atomic: a kill mid-write never leaves half a file


def save(model: torch.nn.Module, folder: str | Path, meta: dict[str, Any] | None = None) -> None:
    """Write fp16 weights and the config (plus `meta`: name, hashes, training settings)."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    weights = {k: v.detach().to("cpu", torch.float16).contiguous() for k, v in model.state_dict().items()}
    tmp = folder / (WEIGHTS + ".tmp")
    save_file(weights, str(tmp))
    tmp.chmod(0o644)  # safetensors writes 0600; a server running as another user must read it
    tmp.replace(folder / WEIGHTS)
    write_json(folder / CONFIG, {"model": config_to_dict(model.config), **(meta or {})})


def load(folder: str | Path, device: str | torch.device = "cpu") -> torch.nn.Module:
    """Rebuild the model from config.json and fill it with the stored weights, in eval mode."""
    folder = Path(folder)
    config = config_from_dict(read_json(folder / CONFIG)["model"])
    model = build(config)
    weights = {k: v.float() for k, v in load_file(str(folder / WEIGHTS)).items()}
    model.load_state_dict(weights, strict=True)
    return model.to(device).eval()


def read_meta(folder: str | Path) -> dict[str, Any]:
    return read_json(Path(folder) / CONFIG, {})


def read_metrics(folder: str | Path) -> dict[str, Any]:
    return read_json(Path(folder) / METRICS, {})


def read_curve(folder: str | Path) -> list[dict[str, Any]]:
    return read_json(Path(folder) / CURVE, [])
