"""A checkpoint folder is self-contained and safe to load: no pickle anywhere.

    checkpoints/NAME/model.safetensors   fp16 weights (loaded back as fp32)
    checkpoints/NAME/config.json         architecture, training settings, split and tokenizer hashes,
                                         and `weights_sha256`: the sha256 of model.safetensors
    checkpoints/NAME/metrics.json        evaluation on the test split (models.evaluate)
    checkpoints/NAME/curve.json          the training curve (models.train)
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import torch
from safetensors.torch import load_file, save_file

from models.architectures import build
from models.config import config_from_dict, config_to_dict

WEIGHTS, CONFIG, METRICS, CURVE = "model.safetensors", "config.json", "metrics.json", "curve.json"
SUBLAYERS = "sublayers.json"  # the Transformer scored with each sub-layer switch off (models.evaluate)
SHA256 = "weights_sha256"  # config.json's record of the weights file's sha256 (hex)
INITIAL_SHA256 = "initial_weights_sha256"  # the digest of the weights training started from


class CheckpointError(ValueError):
    """A checkpoint that cannot be served; the message names the file and says what is wrong."""


def sha256_of(path: str | Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as file:
        for chunk in iter(lambda: file.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def weights_digest(model: torch.nn.Module) -> str:
    """sha256 over a model's fp32 parameters and buffers, by name: equal digests, equal weights."""
    digest = hashlib.sha256()
    for name, tensor in sorted(model.state_dict().items()):
        digest.update(name.encode())
        digest.update(tensor.detach().to("cpu", torch.float32).contiguous().numpy().tobytes())
    return digest.hexdigest()


def read_json(path: Path, default: Any = None) -> Any:
    return json.loads(path.read_text()) if path.exists() else default


def write_json(path: Path, data: Any) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(data, indent=2, sort_keys=False) + "\n")
    tmp.replace(path)  # atomic: a kill mid-write never leaves half a file


def save(model: torch.nn.Module, folder: str | Path, meta: dict[str, Any] | None = None) -> None:
    """Write fp16 weights and the config (plus `meta`: name, hashes, training settings), which
    records the weights file's sha256 so that `load` refuses a corrupt or altered file."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    weights = {k: v.detach().to("cpu", torch.float16).contiguous() for k, v in model.state_dict().items()}
    tmp = folder / (WEIGHTS + ".tmp")
    save_file(weights, str(tmp))
    tmp.chmod(0o644)  # safetensors writes 0600; a server running as another user must read it
    digest = sha256_of(tmp)
    tmp.replace(folder / WEIGHTS)
    write_json(folder / CONFIG, {"model": config_to_dict(model.config), **(meta or {}), SHA256: digest})


def load(folder: str | Path, device: str | torch.device = "cpu") -> torch.nn.Module:
    """Rebuild the model from config.json and fill it with the stored weights, in eval mode.
    CheckpointError (naming the file) when config.json is missing or unreadable, the weights file
    is missing, differs from the sha256 config.json records, cannot be read, does not fit the
    architecture, or holds a NaN or an infinity."""
    folder = Path(folder)
    config_path, weights_path = folder / CONFIG, folder / WEIGHTS
    config_name, weights_name = f"{folder.name}/{CONFIG}", f"{folder.name}/{WEIGHTS}"
    if not config_path.exists():
        raise CheckpointError(f"{config_name} is missing")
    try:
        meta = json.loads(config_path.read_text())
        config = config_from_dict(meta["model"])
    except (ValueError, KeyError, TypeError) as error:  # JSONDecodeError is a ValueError
        why = f"{type(error).__name__}: {error}"
        raise CheckpointError(f"{config_name} is not a model config ({why})") from error
    if not weights_path.exists():
        raise CheckpointError(f"{weights_name} is missing")
    expected = meta.get(SHA256)
    if expected is not None:
        actual = sha256_of(weights_path)
        if actual != expected:
            raise CheckpointError(f"{weights_name} is corrupt or altered: its sha256 {actual[:16]}... is not "
                                  f"the {str(expected)[:16]}... that {CONFIG} records")
    try:
        weights = {k: v.float() for k, v in load_file(str(weights_path)).items()}
    except Exception as error:  # safetensors raises its own error types for a truncated or garbled file
        raise CheckpointError(f"{weights_name} is not a readable safetensors file ({error})") from error
    broken = [k for k, v in weights.items() if not torch.isfinite(v).all()]
    if broken:
        raise CheckpointError(f"{weights_name} holds NaN or infinite weights ({', '.join(broken[:3])}"
                              f"{', ...' if len(broken) > 3 else ''})")
    model = build(config)
    try:
        model.load_state_dict(weights, strict=True)
    except RuntimeError as error:
        raise CheckpointError(f"{weights_name} does not fit the architecture in {CONFIG} ({error})") from error
    return model.to(device).eval()


def read_meta(folder: str | Path) -> dict[str, Any]:
    return read_json(Path(folder) / CONFIG, {})


def read_metrics(folder: str | Path) -> dict[str, Any]:
    return read_json(Path(folder) / METRICS, {})


def read_sublayers(folder: str | Path) -> list[dict[str, Any]]:
    """sublayers.json's variants (models.evaluate --sublayers), [] when the model was not scored so."""
    return read_json(Path(folder) / SUBLAYERS, {}).get("variants", [])


def read_curve(folder: str | Path) -> list[dict[str, Any]]:
    return read_json(Path(folder) / CURVE, [])
