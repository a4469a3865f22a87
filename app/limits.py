"""The bounds of one request, in one place: the settings fill them (app/config.py), the registry
enforces them, GET /api/health tells them (app/schemas/catalog.py's Health). Torch-free, so the settings
load without it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from pydantic import Field

from models.config import MAX_BEAM_SIZE  # hypotheses a beam search keeps

# Fixed by the contract (the request schemas' own bounds), told to clients with the settable ones
MAX_TIMING_LENGTH = 2000  # longest input chapter 6 times, in pieces
MAX_TIMING_LENGTHS = 16  # input lengths per timing


@dataclass(frozen=True)
class Limits:
    """The bounds of one request, told to clients by GET /api/health."""

    max_chars: Annotated[int, Field(description="longest input text, after trimming and normalisation")] = 500
    # output pieces: bounds the work when a model does not stop
    max_target_tokens: Annotated[int, Field(description="longest output, in pieces")] = 128
    max_gradient_length: Annotated[int, Field(description="longest repeated input of /api/gradients")] = 200
    max_beam_size: Annotated[int, Field(description="largest beam_size of /api/translate and /api/predict")] = \
        MAX_BEAM_SIZE
    max_timing_length: Annotated[int, Field(description="longest input length of /api/timing")] = \
        MAX_TIMING_LENGTH
    max_timing_lengths: Annotated[int, Field(description="most input lengths in one /api/timing")] = \
        MAX_TIMING_LENGTHS
