"""POST /api/scores (the attention chapter): one output piece's attention scores, weights and blend."""

from __future__ import annotations

from typing import Literal

from pydantic import ConfigDict, Field

from app.schemas.base import Response, TextRequest
from app.schemas.translation import Translation


class ScoresRequest(TextRequest):
    model: str | None = Field(None, description="a recurrent model with attention over the source (GET "
                                                "/api/models: `recurrent` and `cross_attention`); default: "
                                                "the first loaded", examples=["lstm-additive"])
    row: int = Field(0, ge=0, description="output position: index into the translation's `target_tokens`",
                     examples=[1])
    temperature: float = Field(1.0, ge=0.01, le=100, allow_inf_nan=False,
                               description="T of `reweighted` = softmax(e / T), 0.01 to 100: below 1 sharper, "
                                           "above 1 flatter", examples=[1.0])


class Blend(Response):
    rule: str = Field(description="how the units shown were chosen")
    units: list[int] = Field(description="encoder state units shown, ascending")
    hidden_size: int = Field(description="H, units in each encoder state")
    states: list[list[float]] = Field(description="source piece x unit: h_j for `units`")
    context: list[float] = Field(description="sum_j weights_j h_j for `units`: what the blend gives")
    state_norms: list[float] = Field(description="per source piece: ||h_j|| over all H units")
    context_norm: float = Field(description="||context|| over all H units")


class Scores(Translation):
    row: int
    query_token: str = Field(description="target_tokens[row], the piece this step produced")
    attention: Literal["additive", "dot"]
    formula: str = Field(description="the score of decoder state s against encoder state h_j")
    definition: str
    scores: list[float] = Field(description="e_j per source piece, before the softmax")
    weights: list[float] = Field(description="softmax(e): the model's own attention weights (the row of the "
                                             "`cross` map of POST /api/attention)")
    entropy: float = Field(description="entropy of `weights`, in `entropy_unit`")
    max_weight: float
    temperature: float
    reweighted: list[float] = Field(description="softmax(e / temperature)")
    reweighted_entropy: float
    reweighted_max_weight: float
    entropy_unit: Literal["nats"]
    max_entropy: float = Field(description="ln S: the entropy of uniform weights over the S source pieces")
    blend: Blend = Field(description="the encoder states and the context the weights make of them")

    model_config = ConfigDict(json_schema_extra={"examples": [
        {"model": "lstm-additive", "translation": "I eat bread.",
         "source_tokens": ["▁Je", "▁mange", "▁du", "▁pain", "."],
         "target_tokens": ["▁I", "▁eat", "▁bread", "."], "finished": True, "row": 1, "query_token": "▁eat",
         "attention": "additive", "formula": "e_j = v^T tanh(W s + U h_j)", "definition": "...",
         "scores": [1.2, 7.9, 2.3, 0.4, -1.0], "weights": [0.0012, 0.9933, 0.0037, 0.0006, 0.0001],
         "entropy": 0.04532, "max_weight": 0.9933, "temperature": 5.0,
         "reweighted": [0.1353, 0.5163, 0.1645, 0.1128, 0.07112], "reweighted_entropy": 1.364,
         "reweighted_max_weight": 0.5163, "entropy_unit": "nats", "max_entropy": 1.609,
         "blend": {"rule": "...", "units": [4, 9], "hidden_size": 512,
                   "states": [[0.1, -0.4], [0.8, 0.2], [0.0, 0.3], [-0.2, 0.1], [0.3, -0.6]],
                   "context": [0.7951, 0.1982], "state_norms": [9.1, 10.3, 8.7, 9.9, 7.5],
                   "context_norm": 10.2}}]})
