"""The bounds of one request, in one place: the settings fill them (app/config.py), the registry
enforces them, GET /api/health tells them (app/schemas.py's Health). Torch-free, so the settings
load without it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from pydantic import Field


@dataclass(frozen=True)
class Limits:
    """The bounds of one request, told to clients by GET /api/health."""

    max_chars: Annotated[int, Field(description="longest input text, after trimming and normalisation")] = 500
    # output pieces: bounds the work when a model does not stop
    max_target_tokens: Annotated[int, Field(description="longest output, in pieces")] = 128
    max_gradient_length: Annotated[int, Field(description="longest repeated input of /api/gradients")] = 200
