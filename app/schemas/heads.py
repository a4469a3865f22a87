"""POST /api/heads (the heads chapter): what each head contributes, and what switching heads off changes."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from app.schemas.base import SWITCHED_MODEL, AttentionKind, HeadSwitch, Response, TextRequest
from app.schemas.translation import Translation


class HeadsRequest(TextRequest):
    model: str | None = SWITCHED_MODEL
    heads_off: list[HeadSwitch] = Field([], max_length=64, description="heads switched off",
                                        examples=[[{"kind": "cross", "layer": 2, "head": 1}]])
    reference: str | None = Field(None, description="a recurrent model with attention whose alignment ranks "
                                                    "the cross heads (default: lstm-additive when loaded)",
                                  examples=["lstm-additive"])


class HeadContribution(Response):
    kind: AttentionKind
    layer: int
    head: int
    off: bool = Field(description="switched off: its contribution is exactly zero")
    norms: list[float] = Field(description="||c_h W_o[:, h]^T|| per query row (rows: `rows[kind]`)")
    mean: float
    max_weight: float = Field(description="mean largest attention weight per row: how sharp the head looks")


class AlignedHead(Response):
    layer: int
    head: int
    score: float
    off: bool


class Alignment(Response):
    reference: str
    reference_translation: str
    same_translation: bool
    reference_map: list[list[float]] = Field(description="target piece x source piece, teacher-forced")
    ranking: list[AlignedHead] = Field(description="cross-attention heads, best aligned first")


class HeadEffect(Response):
    translation: str
    tokens: list[str]
    log_prob_all_heads: float
    log_prob_heads_off: float


class SublayerNorm(Response):
    kind: AttentionKind
    layer: int
    mean: float = Field(description="mean norm of the attention sub-layer's whole output")


class Heads(Translation):
    heads_off: list[HeadSwitch]
    definition: dict[str, str]
    rows: dict[str, list[str]] = Field(description="per kind, the query rows of `norms`")
    contributions: list[HeadContribution]
    sublayer_norms: list[SublayerNorm] = Field(
        description="per attention sub-layer, the mean norm of its whole output (for scale)")
    rollout: list[list[list[float]]] = Field(description="per encoder layer, source x source rollout")
    alignment: Alignment | None = Field(description="null without a reference model or translation")
    effect: dict[Literal["original", "changed"], HeadEffect] | None = Field(
        None, description="with heads_off: the translation with all heads (original) and with the heads off "
                          "(changed), each scored by the model with and without them (teacher-forced)")
