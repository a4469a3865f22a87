"""The bounds of one request, in one place: the settings fill them (app/config.py), the registry
enforces them, GET /api/health tells them (app/schemas/catalog.py's Health). Torch-free, so the settings
load without it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from limits import parse
from pydantic import Field

from models.config import MAX_BEAM_SIZE  # hypotheses a beam search keeps

# Fixed by the contract (the request schemas' own bounds), told to clients with the settable ones
MAX_TIMING_LENGTH = 2000  # longest input the parallel chapter times, in pieces
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


@dataclass(frozen=True)
class Budget:
    """A client's share of one experiment (app/runtime/shares.py): `amount` units per `window_s`
    seconds, a bucket of `amount` that empties at their ratio. Told to clients by the RateLimit
    headers."""

    name: str
    amount: int
    window_s: int
    unit: str = "asks"  # what one unit is, in the refusal's words ("runs", "seconds of model time")
    # the room an ask needs to start: 1 where an ask is a unit; 0 where its cost is known only once
    # it has run (model time), so that the bucket is never refused below its amount
    need: float = 1.0

    @classmethod
    def parse(cls, name: str, text: str, unit: str = "asks", need: float = 1.0) -> Budget:
        """From the `limits` package's notation, e.g. "3/10 minutes"."""
        item = parse(text)
        return cls(name, item.amount, item.get_expiry(), unit, need)

    @property
    def rate(self) -> float:
        """Units per second the bucket empties by."""
        return self.amount / self.window_s
