"""GET /api/health, /api/models and the training curves: what the server runs and what each model
is, with its shipped evaluation."""

from __future__ import annotations

from typing import Literal

from pydantic import ConfigDict, Field

from app import defaults
from app.limits import Limits
from app.schemas.base import AttentionKind, Response
from models.lengths import BUCKETS
from models.serving.options import LAYOUTS, PRECISIONS


class Numerics(Response):
    precision: Literal[PRECISIONS] = Field(
        description="fp32: every product multiplies the weights' fp32 copies; fp16-weights: the weights the "
                    "checkpoints store in fp16 are read from an fp16 copy (the same numbers), and multiplied "
                    "and summed in fp32 all the same (products that are differentiated use the fp32 copies)")
    layout: Literal[LAYOUTS] = Field(
        description="how the weights lie in memory: input-major (wide matrices column by column, faster "
                    "one-row decoding steps on a CPU; the same values) or the checkpoint's own order")


class Dropped(Response):
    """Model work since start-up that nobody wanted any more: superseded by a newer text, or its
    client gone. Expected while a reader types; counted here rather than logged."""
    skipped: int = Field(description="jobs whose client had gone before their turn came")
    stopped: int = Field(description="searches stopped between two decoder steps")


class Stepping(Response):
    """Where readers' compares are stepped (docs/SERVER.md, "Stepping processes")."""
    processes: int = Field(description="stepper processes this replica runs (0: its model thread steps them)")
    ready: int = Field(description="of those, how many take sentences now; until one is, the model thread "
                                   "steps its models' sentences")


class PageDefaults(Response):
    """What the page opens with (app/defaults.py); its first visit's answers are computed ahead."""
    text: str = Field(description="the sentence in the box")
    length: int = Field(description="the gradients chapter's input length, in pieces (POST /api/gradients "
                                    "`length`)")
    seed: int = Field(description="the order chapter's shuffle (POST /api/order `seed`)")
    top_k: int = Field(description="the prediction chapter's likeliest pieces per step (POST /api/predict "
                                   "`top_k`)")


class LengthGroup(Response):
    """One of the evaluation's length groups (models/lengths.py), which `bleu_by_length` is split by."""
    bucket: str = Field(description="its name, as `LengthBucket.bucket` gives it")
    min_words: int = Field(description="the fewest whitespace-separated words of a source sentence in it")
    max_words: int | None = Field(description="the most; null for the last group, which has no upper bound")


def _length_groups() -> list[LengthGroup]:
    return [LengthGroup(bucket=name, min_words=low, max_words=high) for name, low, high in BUCKETS]


class Clients(Response):
    """Who a client is, for each client's share of the expensive experiments (docs/SERVER.md)."""
    by: str = Field(description="how clients are told apart: an IPv4 client is its address, an IPv6 client "
                                "its /64 (any of its 2^64 addresses is the same client)")
    trusted_proxies: list[str] = Field(description=(
        "the proxies whose X-Forwarded-For is believed (addresses or networks), as FORWARDED_ALLOW_IPS "
        "lists them, uvicorn's default (127.0.0.1, ::1) where it is unset; [\"*\"]: every peer's, so any "
        "client can name itself"))
    one_client_behind: str | None = Field(description=(
        "the latest peer that sent X-Forwarded-For without being a trusted proxy: the header was ignored, "
        "so every reader behind it is counted as this one client (one share for all); null: none since "
        "start-up"))


class Health(Response):
    status: Literal["ok", "degraded"]
    device: str
    models: list[str]
    unavailable: dict[str, str] = Field({}, description="models that did not load, with the reason")
    limits: Limits
    numerics: Numerics
    dropped: Dropped
    stepping: Stepping
    defaults: PageDefaults
    length_buckets: list[LengthGroup] = Field(default_factory=_length_groups, description=(
        "the evaluation's length groups, shortest first: a reader's sentence belongs to the one its "
        "word count falls in (the page picks the models' BLEU for sentences of its length)"))
    clients: Clients

    model_config = ConfigDict(json_schema_extra={"examples": [
        {"status": "ok", "device": "cpu", "models": ["lstm", "transformer"],
         "unavailable": {"rnn": "CheckpointError: rnn/model.safetensors is missing"},
         "limits": {"max_chars": 500, "max_target_tokens": 128, "max_gradient_length": 200, "max_beam_size": 8,
                    "max_timing_length": 2000, "max_timing_lengths": 16},
         "numerics": {"precision": "fp16-weights", "layout": "input-major"},
         "dropped": {"skipped": 3, "stopped": 5},
         "stepping": {"processes": 2, "ready": 2},
         "defaults": {"text": defaults.TEXT, "length": defaults.LENGTH, "seed": defaults.SEED,
                      "top_k": defaults.TOP_K},
         "length_buckets": [{"bucket": name, "min_words": low, "max_words": high}
                            for name, low, high in BUCKETS],
         "clients": {"by": "address, IPv6 by /64", "trusted_proxies": ["127.0.0.1", "::1", "10.0.0.0/8"],
                     "one_client_behind": None}}]})


class LengthBucket(Response):
    bucket: str
    pairs: int
    bleu: float
    chrf: float | None = None
    bleu_low: float | None = Field(None, description="2.5th percentile of BLEU over 1,000 bootstrap samples of "
                                                     "the bucket's sentences (older reports have none)")
    bleu_high: float | None = Field(None, description="97.5th percentile of the same")


class Example(Response):
    source: str
    reference: str
    hypothesis: str


class Metrics(Response):
    """The shipped evaluation (checkpoints/<name>/metrics.json, written by models/evaluate.py)."""

    split: str | None = Field(None, description="the split scored (test)")
    split_hash: str | None = Field(None, description="a fingerprint of that split's sentence pairs")
    decoding: str | None = Field(None, description="how the translations were searched (greedy)")
    decode_seconds: float | None = Field(None, description="wall time of the whole evaluation's decoding")
    examples: list[Example] = Field([], description="a few test sentences with the model's translation")
    bleu: float | None = None
    bleu_low: float | None = None
    bleu_high: float | None = None
    chrf: float | None = None
    pairs: int | None = None
    bleu_by_length: list[LengthBucket] = []


class CurvePoint(Response):
    step: int
    epoch: float | None = None
    tokens: int | None = None
    seconds: float | None = None
    train_loss: float | None = None
    valid_loss: float | None = None
    valid_bleu: float | None = None


class KeptPoint(Response):
    step: int = Field(description="optimizer step of the evaluation whose weights were kept (a curve "
                                  "point's `step`)")
    seconds: float | None = Field(None, description="training seconds at that evaluation (a curve point's "
                                                    "`seconds`)")
    epoch: float | None = None
    valid_bleu: float | None = Field(None, description="validation BLEU there: the best of the run")
    valid_loss: float | None = Field(None, description="validation loss there (breaks BLEU ties)")


class Recipe(Response):
    learning_rate: float = Field(description="the optimizer's peak learning rate")
    label_smoothing: float = Field(description="the share of each label's probability the training target "
                                               "spreads over the other pieces")
    averaged: int = Field(description="how many evaluations' weights the shipped weights average (1: none "
                                      "averaged)")


class SublayerScore(Response):
    off: Literal["feed_forward", "residual_attention", "residual_feed_forward"] | None = Field(
        description="the sub-layer switch off in every layer (POST /api/translate's `sublayers_off`); "
                    "null: none")
    bleu: float = Field(description="test-split BLEU, greedy, with that switch off")
    bleu_low: float = Field(description="2.5th percentile of a 1000-sample bootstrap")
    bleu_high: float = Field(description="97.5th percentile")
    chrf: float
    decode_seconds: float = Field(description="how long the test split's decoding took")


class SnapshotPoint(Response):
    step: int = Field(description="optimizer steps of training behind these weights")
    epoch: float | None = None
    seconds: float | None = Field(None, description="training seconds at that step")
    valid_loss: float | None = Field(None, description="validation loss (per target piece) there")
    valid_bleu: float | None = Field(None, description="validation BLEU there (the curve's pairs)")
    weights: Literal["initialized", "snapshot", "shipped"] = Field(
        description="initialized: rebuilt from the config and training seed (nothing stored); snapshot: "
                    "stored during training; shipped: the checkpoint every other view uses")
    precision: str = Field(description="how the weights are stored: int8 (groups of 32 weights with a scale "
                                       "each), int8 with the embeddings in fp16, fp16, or fp32 (rebuilt)")


class ModelInfo(Response):
    name: str
    architecture: Literal["rnn", "lstm", "transformer"]
    attention: Literal["additive", "dot", "scaled-dot"] | None
    parameters: int
    layers: int
    heads: int
    recurrent: bool = Field(description="reads the source through a recurrence (gradient experiment)")
    gates: bool = Field(description="an LSTM: its gates can be shown")
    cross_attention: bool = Field(description="its decoder attends over the source (alignment maps)")
    attention_kinds: list[AttentionKind] = Field(
        description="the attention maps POST /api/attention returns for it")
    switches: bool = Field(description="the encoder's positional encoding and single heads can be switched off")
    width: int = Field(description="the numbers each position carries from layer to layer: a Transformer's "
                                   "d_model, a recurrent model's state")
    feed_forward: int = Field(description="the hidden width of the feed-forward layer each position goes "
                                          "through (a Transformer's d_ff); 0: none")
    summary: str = Field(description="one line for a reader")
    metrics: Metrics
    curve_points: int = Field(description="points in the training curve (GET /api/models/{name}/curve)")
    kept: KeptPoint | None = Field(None, description="the curve point whose weights were kept (the best "
                                                     "validation BLEU, then loss); null: not recorded")
    recipe: Recipe | None = Field(None, description="how it was trained (config.json); null: not recorded")
    sublayers: list[SublayerScore] = Field(
        [], description="the test split scored with each sub-layer switch off (checkpoints/NAME/"
                        "sublayers.json, models.evaluate --sublayers), the shipped model first; [] if not "
                        "scored")
    snapshots: list[SnapshotPoint] = Field([], description="training as POST /api/snapshots can replay it, "
                                                           "initialization first, shipped weights last; [] "
                                                           "for a model trained without snapshots")

    model_config = ConfigDict(json_schema_extra={"examples": [
        {"name": "transformer", "architecture": "transformer", "attention": "scaled-dot",
         "parameters": 7586624, "layers": 3, "heads": 4, "width": 256, "feed_forward": 1024,
         "recurrent": False, "gates": False,
         "cross_attention": True, "attention_kinds": ["cross", "encoder", "decoder"], "switches": True,
         "summary": "Transformer: heads, layers, no recurrence", "curve_points": 13,
         "kept": {"step": 1359, "seconds": 4390.1, "epoch": 3, "valid_bleu": 54.19, "valid_loss": 1.3874},
         "metrics": {"bleu": 41.2, "chrf": 60.3,
                     "bleu_by_length": [{"bucket": "1-5", "pairs": 812, "bleu": 55.0}]}}]})


class Curve(Response):
    model: str
    points: list[CurvePoint]
