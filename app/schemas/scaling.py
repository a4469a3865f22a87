"""POST /api/scaling (the scaling chapter): the softmax with and without the 1/sqrt(d_k) scale."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from app.schemas.base import SWITCHED_MODEL, AttentionKind, Response, TextRequest
from app.schemas.translation import Translation


class ScalingRequest(TextRequest):
    model: str | None = SWITCHED_MODEL
    # bounds keep the worst request to seconds of work: draws x keys x d_k floats per width
    d_k: list[Annotated[int, Field(ge=1, le=1024)]] | None = Field(
        None, min_length=1, max_length=12, description="widths of the sampled curves (default: 4, 8, 16, ..., "
                                                       "1024)", examples=[[4, 16, 64, 256, 1024]])
    keys: int = Field(16, ge=2, le=32, description="keys each sampled query is scored against")


class SaturationPoint(Response):
    d_k: int
    score_std: float = Field(description="standard deviation of the scores")
    max_weight: float = Field(description="mean largest softmax weight (1/keys: uniform, 1: one-hot)")
    entropy: float = Field(description="mean softmax entropy, nats (ln keys: uniform, 0: one-hot)")
    gradient: float = Field(description="mean ||diag(p) - p p^T||_F, the softmax's Jacobian")


class SampledCurves(Response):
    distribution: str = Field(description="how q and k were drawn")
    keys: int
    draws: int = Field(description="queries averaged over per point")
    seed: int
    d_k: list[int]
    unscaled: list[SaturationPoint] = Field(description="scores q . k")
    scaled: list[SaturationPoint] = Field(description="scores q . k / sqrt(d_k)")
    at_model_d_k: dict[str, SaturationPoint] = Field(description="both variants at the model's d_k")


class HeadSpread(Response):
    kind: AttentionKind
    layer: int
    head: int
    d_k: int
    raw_std: float = Field(description="std of q . k over the pairs the head may see")
    scaled_std: float = Field(description="std of q . k / sqrt(d_k): what the model's softmax gets")
    max_weight: float
    entropy: float
    gradient: float
    unscaled_max_weight: float = Field(description="the same, had the model not divided by sqrt(d_k)")
    unscaled_entropy: float
    unscaled_gradient: float


class Scaling(Translation):
    d_k: int = Field(description="the model's d_k = d_model / heads")
    definition: str
    sampled: SampledCurves
    heads: list[HeadSpread] = Field(description="the model's own queries and keys on the text, teacher-forced "
                                                "on its greedy translation")
    summary: dict[str, dict[str, float]] = Field(description="per kind: means of the head figures")
