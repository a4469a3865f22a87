"""POST /api/translate, /api/attention and /api/compare: a translation, its attention maps, and a
model's failure line in a comparison."""

from __future__ import annotations

from typing import Literal

from pydantic import ConfigDict, Field, field_validator

from app.limits import MAX_BEAM_SIZE
from app.schemas.base import AttentionKind, HeadSwitch, Response, TextRequest, once_each

# The Transformer's switches (the order, heads and room chapters), in the same words on every request
# that decodes.
# Only the encoder's positional encoding is switched: the order chapter shuffles the source.
POSITIONAL = Field(None, description="Transformer only: the encoder's positional encoding on (true) or off "
                                     "(false); default: as the model was trained. The decoder always adds "
                                     "its own")
HEADS_OFF = Field([], max_length=64, description="Transformer only: heads switched off")
_SUBLAYERS_OFF = Field([], max_length=3, json_schema_extra={"uniqueItems": True},
                      description="Transformer only, in every layer: `feed_forward` leaves out the "
                                  "feed-forward sub-layers; `residual_attention` / `residual_feed_forward` "
                                  "replace the stream by the attention's / feed-forward's output instead of "
                                  "adding it; each at most once")
_SublayerSwitch = Literal["feed_forward", "residual_attention", "residual_feed_forward"]


class TranslateRequest(TextRequest):
    model: str | None = Field(None, description="one of the loaded models (GET /api/models); default: the "
                              "first whose heads can be switched (the Transformer), else the last loaded",
                              examples=["transformer"])
    beam_size: int = Field(1, ge=1, le=MAX_BEAM_SIZE,
                           description=f"1: greedy search; 2-{MAX_BEAM_SIZE}: beam search")
    top_k: int = Field(0, ge=0, le=10, description="report the k likeliest next pieces at each step (0: off)")
    positional: bool | None = POSITIONAL
    heads_off: list[HeadSwitch] = HEADS_OFF
    sublayers_off: list[_SublayerSwitch] = _SUBLAYERS_OFF

    @field_validator("sublayers_off")
    @classmethod
    def _each_once(cls, switches: list[str]) -> list[str]:
        if len(set(switches)) != len(switches):
            raise ValueError("name each sub-layer switch at most once")
        return switches


class AttentionRequest(TextRequest):
    model: str | None = Field(None, description="one of the loaded models (GET /api/models); default: as for "
                              "POST /api/translate", examples=["transformer"])
    kinds: list[AttentionKind] = Field(
        ["cross", "encoder", "decoder"], min_length=1, max_length=3,
        description="which maps to return (all by default; fewer keeps long inputs' payloads small)")
    positional: bool | None = POSITIONAL
    heads_off: list[HeadSwitch] = HEADS_OFF


class CompareRequest(TextRequest):
    models: list[str] = Field([], max_length=8, json_schema_extra={"uniqueItems": True},
                              description="models to run, in this order, each at most once (default: every "
                                          "loaded model)",
                              examples=[["transformer", "lstm-dot", "lstm-additive", "lstm", "rnn"]])
    _once_each = field_validator("models")(once_each)


class Alternative(Response):
    token: str
    probability: float


class Step(Response):
    token: str = Field(description="the piece chosen at this step (<eos> at the last)")
    top: list[Alternative]


class Candidate(Response):
    translation: str
    tokens: list[str]
    log_prob: float
    score: float = Field(description="log_prob after the length penalty: what the beam ranks by")
    finished: bool


class Translation(Response):
    model: str
    translation: str
    source_tokens: list[str]
    target_tokens: list[str]
    finished: bool = Field(True, description="False when decoding stopped at the length limit")
    steps: list[Step] | None = Field(None, description="with top_k > 0: the next-piece alternatives per step")
    candidates: list[Candidate] | None = Field(None, description="with beam_size > 1: the final beam")

    model_config = ConfigDict(json_schema_extra={"examples": [
        {"model": "transformer", "translation": "I eat bread.",
         "source_tokens": ["▁Je", "▁mange", "▁du", "▁pain", "."],
         "target_tokens": ["▁I", "▁eat", "▁bread", "."], "finished": True}]})


class AttentionMap(Response):
    kind: AttentionKind = Field(
        description="cross: decoder queries over source keys; encoder, decoder: self-attention (causal)")
    layer: int
    head: int
    rows: list[str] = Field(description="query tokens")
    cols: list[str] = Field(description="key tokens")
    weights: list[list[float]] = Field(description="len(rows) x len(cols); each row sums to 1")


class Attention(Translation):
    maps: list[AttentionMap]

    model_config = ConfigDict(json_schema_extra={"examples": [
        {"model": "lstm-dot", "translation": "I eat bread.",
         "source_tokens": ["▁Je", "▁mange", "▁du", "▁pain", "."],
         "target_tokens": ["▁I", "▁eat", "▁bread", "."], "finished": True,
         "maps": [{"kind": "cross", "layer": 0, "head": 0, "rows": ["▁I", "▁eat", "▁bread", "."],
                   "cols": ["▁Je", "▁mange", "▁du", "▁pain", "."],
                   "weights": [[0.91, 0.05, 0.02, 0.01, 0.01], [0.03, 0.9, 0.04, 0.02, 0.01],
                               [0.01, 0.02, 0.12, 0.84, 0.01], [0.01, 0.01, 0.01, 0.02, 0.95]]}]}]})


class ModelFailure(Response):
    """A line of POST /api/compare for a model that failed: the other models' lines stand."""

    model: str
    error: str = Field(description="the exception's type and message")
