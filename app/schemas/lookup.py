"""POST /api/lookup (the attention chapter's last part): softmax(Q K^T / sqrt(d_k)) V on one Transformer
head."""

from __future__ import annotations

from pydantic import Field

from app.schemas.base import SWITCHED_MODEL, Response, TextRequest


class LookupRequest(TextRequest):
    model: str | None = SWITCHED_MODEL
    head: int = Field(0, ge=0, le=255, description="head of the first encoder self-attention layer, from 0 "
                                                 "(at most the model's heads - 1: 422 naming `head`)",
                      examples=[0])


class Lookup(Response):
    model: str
    source_tokens: list[str] = Field(description="the source pieces: the rows (queries) and columns (keys)")
    layer: int = Field(description="the encoder layer, from 0 (always the first)")
    head: int
    heads: int = Field(description="heads in the layer")
    d_model: int = Field(description="width of the residual stream the three projections read")
    d_k: int = Field(description="width of one head's queries, keys and values: d_model / heads")
    shapes: dict[str, list[int]] = Field(description="Q, K and V: [pieces, d_k] each")
    definition: str
    scores: list[list[float]] = Field(description="query x key: q_i . k_j / sqrt(d_k)")
    weights: list[list[float]] = Field(description="query x key: each row of `scores` through a softmax "
                                                   "(every row sums to 1)")
    weights_difference: float = Field(description="max |weights - the model's own weights for this head|")
    max_abs_difference: float = Field(description="max |weights V - the head's output in the model's own "
                                                  "pass| over every piece and unit (rounding only)")
    output_scale: float = Field(description="max |the head's output|, to read the difference against")
