"""POST /api/next-token (the prediction chapter): the loss at every position of one teacher-forced pass."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from app.schemas.base import SWITCHED_MODEL, TextRequest
from app.schemas.translation import Translation


class NextTokenRequest(TextRequest):
    model: str | None = SWITCHED_MODEL
    reference: str | None = Field(
        None, min_length=1, max_length=500,
        description="an English translation to score instead of the model's own (greedy) one; at most "
                    "`limits.max_target_tokens` pieces (422 naming `reference`)",
        examples=["I'm eating bread."])


class NextToken(Translation):
    target: Literal["translation", "reference"] = Field(
        description="what was scored: the model's own greedy translation, or the reference given")
    labels: list[str] = Field(description="the pieces scored, <eos> last: one label per position")
    losses: list[float] = Field(description="per label, -ln p(label | source, pieces before it), nats")
    mean_loss: float = Field(description="their mean: the loss training minimises on this pair, nats")
    definition: str
