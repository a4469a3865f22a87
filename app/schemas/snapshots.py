"""POST /api/snapshots (the attention and heads chapters): the attention maps at a training step."""

from __future__ import annotations

from pydantic import Field

from app.schemas.base import AttentionKind, TextRequest
from app.schemas.catalog import SnapshotPoint
from app.schemas.translation import Attention


class SnapshotRequest(TextRequest):
    model: str = Field(description="a model whose `snapshots` (GET /api/models) are not empty",
                       examples=["transformer"])
    step: int = Field(ge=0, description="a training step of the model's `snapshots`: 0 is the seeded "
                                        "initialization, the last one the shipped weights", examples=[0])
    kinds: list[AttentionKind] = Field(
        ["cross", "encoder", "decoder"], min_length=1, max_length=3, description="which maps to return")


class Snapshot(Attention):
    snapshot: SnapshotPoint
