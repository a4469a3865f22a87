"""Where the tensors live: one rule for the server, training and the scripts."""

from __future__ import annotations

import torch

DEVICES = ("auto", "cpu", "cuda")


def choose_device(setting: str) -> torch.device:
    """"auto" picks cuda when a GPU is visible, else the CPU; an explicit "cuda" without a GPU is
    a configuration error, said at once rather than as a failure deep inside the first request."""
    if setting not in DEVICES:
        raise ValueError(f"device must be one of {', '.join(DEVICES)}, got {setting!r}")
    if setting == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if setting == "cuda" and not torch.cuda.is_available():
        raise RuntimeError("device cuda asked for, but torch.cuda.is_available() is False")
    return torch.device(setting)
