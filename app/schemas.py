"""Request and response models of the JSON contract (../shared/docs/API.md), with examples so
/docs is a usable reference. Fields beyond the contract are additive and optional.

Each shape is written here once: the services build their answers as these models (app/services/),
the routes declare them, and /openapi.json is generated from them. Both sides refuse a key they do
not name: a request with one is 422, a service that made one fails where it made it.

A leaf: nothing here reads the settings or calls a service. Limits that depend on the server's
settings (the text's length, the gradient input's length) are checked once, by the services, and
told to clients by GET /api/health."""

from __future__ import annotations

import json
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from app.limits import MAX_BEAM_SIZE, MAX_TIMING_LENGTH, MAX_TIMING_LENGTHS, Limits
from models.live_config import CONTESTANTS, LiveConfig, LiveLimits
from models.serving.options import LAYOUTS, PRECISIONS

EXAMPLE_TEXT = "Je mange du pain."
# "3" is not a beam size: wrong types are 422, never coerced; a field the server does not know is
# 422 too (a misspelt option would otherwise be ignored without a word)
Strict = ConfigDict(strict=True, extra="forbid")


def _integral(value):
    """Integral floats as ints, all through lists and objects: 3.0 is the integer 3 in JSON (and in
    JSON Schema's "integer"), so a client that writes it gets what the schema promised; 3.5 and "3"
    are still refused by the strict fields."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, list):
        return [_integral(v) for v in value]
    if isinstance(value, dict):
        return {k: _integral(v) for k, v in value.items()}
    return value


# what a client is told when a model's answer holds a NaN or an infinity
NON_FINITE = ("the model computed a non-finite value (NaN or infinity) on this input, so it has no answer; "
              "its weights may be damaged")


class NonFiniteAnswerError(ValueError):
    """503: an answer the server computed holds a NaN or an infinity, which JSON cannot carry. Raised
    where the answer is written (`Response.to_json`), so it is never confused with a request that
    holds one (a 422, app/guard.py's FiniteJson)."""

    def __init__(self) -> None:
        super().__init__(NON_FINITE)


class Response(BaseModel):
    """A response body, built by the services themselves: a key this contract does not name is an
    error where the answer is made (a misspelt field never reaches a client, or vanishes)."""

    # a NaN or infinity is written as JSON's missing NaN/Infinity, never as null: `to_json` refuses it
    model_config = ConfigDict(extra="forbid", ser_json_inf_nan="constants")

    def to_json(self, exclude_none: bool = False) -> str:
        """This answer as JSON, written once by pydantic-core. A NaN or an infinity has no JSON: it
        raises NonFiniteAnswerError, which the app answers with a 503 that says the model computed
        a non-finite value."""
        text = self.model_dump_json(exclude_none=exclude_none)
        if "NaN" in text or "Infinity" in text:  # one, or only a text that spells it: json.dumps tells
            try:
                return json.dumps(self.model_dump(mode="json", exclude_none=exclude_none), allow_nan=False,
                                  ensure_ascii=False, separators=(",", ":"))
            except ValueError:
                raise NonFiniteAnswerError() from None
        return text


class Request(BaseModel):
    """A request body: strict types, no unknown fields, integral floats read as integers."""

    model_config = Strict

    @model_validator(mode="before")
    @classmethod
    def _integers(cls, data):
        return _integral(data)


class TextRequest(Request):
    text: str = Field(description="French text, 1 to `limits.max_chars` (GET /api/health; 500 by default) "
                                  "characters after trimming white space, and again after NFKC normalisation; "
                                  "checked by the server (422 naming `text`)", examples=[EXAMPLE_TEXT])


class HeadSwitch(Request):
    kind: Literal["encoder", "decoder", "cross"]
    layer: int = Field(ge=0)
    head: int = Field(ge=0)


class TranslateRequest(TextRequest):
    model: str | None = Field(None, description="one of the loaded models (GET /api/models); default: the "
                              "first whose heads can be switched (the Transformer), else the last loaded",
                              examples=["transformer"])
    beam_size: int = Field(1, ge=1, le=MAX_BEAM_SIZE,
                           description=f"1: greedy search; 2-{MAX_BEAM_SIZE}: beam search")
    top_k: int = Field(0, ge=0, le=10, description="report the k likeliest next pieces at each step (0: off)")
    positional: bool | None = Field(None, description="Transformer only: switch the positional encoding")
    heads_off: list[HeadSwitch] = Field([], max_length=64, description="Transformer only: heads switched off")


class AttentionRequest(TextRequest):
    model: str | None = Field(None, description="one of the loaded models (GET /api/models); default: as for "
                              "POST /api/translate", examples=["transformer"])
    kinds: list[Literal["cross", "encoder", "decoder"]] = Field(
        ["cross", "encoder", "decoder"], min_length=1, max_length=3,
        description="which maps to return (all by default; fewer keeps long inputs' payloads small)")
    positional: bool | None = Field(None, description="Transformer only: switch the positional encoding")
    heads_off: list[HeadSwitch] = Field([], max_length=64, description="Transformer only: heads switched off")


def once_each(models: list[str]) -> list[str]:
    if len(set(models)) != len(models):
        raise ValueError("name each model at most once")
    return models


class GradientsRequest(TextRequest):
    length: int | None = Field(None, description="repeat the sentence's pieces up to this many, 1 to "
                                                 "`limits.max_gradient_length` (default: its length)")
    models: list[str] = Field([], max_length=8, json_schema_extra={"uniqueItems": True},
                              description="recurrent models to measure, each at most once (default: those "
                                          "without attention)")
    initialized: bool = Field(False, description="also measure each model at its seeded initialization "
                                                 "(the untrained weights training started from)")
    factors: bool = Field(False, description="add each curve's per-step factors (state_norm, shrink, "
                                             "step_factor, hidden_factor, forget_mean; see `definition`)")
    _once_each = field_validator("models")(once_each)


class CompareRequest(TextRequest):
    models: list[str] = Field([], max_length=8, json_schema_extra={"uniqueItems": True},
                              description="models to run, in this order, each at most once (default: every "
                                          "loaded model)",
                              examples=[["transformer", "lstm-dot", "lstm-additive", "lstm", "rnn"]])
    _once_each = field_validator("models")(once_each)


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


class PageDefaults(Response):
    """What the page opens with (app/defaults.py); its first visit's answers are computed ahead."""
    text: str = Field(description="the sentence in the box")
    length: int = Field(description="chapter 3's input length, in pieces (POST /api/gradients `length`)")
    seed: int = Field(description="chapter 8's shuffle (POST /api/order `seed`)")
    top_k: int = Field(description="chapter 10's likeliest pieces per step (POST /api/predict `top_k`)")


class Health(Response):
    status: Literal["ok", "degraded"]
    device: str
    models: list[str]
    unavailable: dict[str, str] = Field({}, description="models that did not load, with the reason")
    limits: Limits
    numerics: Numerics
    dropped: Dropped
    defaults: PageDefaults

    model_config = ConfigDict(json_schema_extra={"examples": [
        {"status": "ok", "device": "cpu", "models": ["lstm", "transformer"],
         "unavailable": {"rnn": "CheckpointError: rnn/model.safetensors is missing"},
         "limits": {"max_chars": 500, "max_target_tokens": 128, "max_gradient_length": 200, "max_beam_size": 8,
                    "max_timing_length": 2000, "max_timing_lengths": 16},
         "numerics": {"precision": "fp16-weights", "layout": "input-major"},
         "dropped": {"skipped": 3, "stopped": 5},
         "defaults": {"text": "Je mange du pain.", "length": 80, "seed": 1, "top_k": 5}}]})


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
    attention_kinds: list[Literal["cross", "encoder", "decoder"]] = Field(
        description="the attention maps POST /api/attention returns for it")
    switches: bool = Field(description="positional encoding and single heads can be switched off")
    summary: str = Field(description="one line for a reader")
    metrics: Metrics
    curve_points: int = Field(description="points in the training curve (GET /api/models/{name}/curve)")
    kept: KeptPoint | None = Field(None, description="the curve point whose weights were kept (the best "
                                                     "validation BLEU, then loss); null: not recorded")
    snapshots: list[SnapshotPoint] = Field([], description="training as POST /api/snapshots can replay it, "
                                                           "initialization first, shipped weights last; [] "
                                                           "for a model trained without snapshots")

    model_config = ConfigDict(json_schema_extra={"examples": [
        {"name": "transformer", "architecture": "transformer", "attention": "scaled-dot",
         "parameters": 7586624, "layers": 3, "heads": 4, "recurrent": False, "gates": False,
         "cross_attention": True, "attention_kinds": ["cross", "encoder", "decoder"], "switches": True,
         "summary": "Transformer: heads, layers, no recurrence", "curve_points": 13,
         "kept": {"step": 1359, "seconds": 4390.1, "epoch": 3, "valid_bleu": 54.19, "valid_loss": 1.3874},
         "metrics": {"bleu": 41.2, "chrf": 60.3,
                     "bleu_by_length": [{"bucket": "1-5", "pairs": 812, "bleu": 55.0}]}}]})


class Curve(Response):
    model: str
    points: list[CurvePoint]


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
    kind: Literal["cross", "encoder", "decoder"] = Field(
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


class GradientCurve(Response):
    model: str
    weights: Literal["trained", "initialized"] = Field(description="the shipped weights or the seeded "
                                                                   "initialization training started from")
    distance: list[int] = Field(description="positions before the last token")
    norm: list[float] = Field(description="||d h_T / d x_(T-1-distance)||_F (4 significant digits)")
    state_norm: list[float] | None = Field(None, description="with factors: ||d h_T / d s_(T-1-distance)||_F")
    shrink: list[float] | None = Field(None, description="with factors: state_norm[i+1] / state_norm[i]")
    step_factor: list[float] | None = Field(None, description="with factors: sigma_max(d s_t / d s_(t-1))")
    hidden_factor: list[float] | None = Field(None, description="with factors: sigma_max(d h_t / d h_(t-1))")
    forget_mean: list[float] | None = Field(None, description="with factors, LSTM: mean forget gate")


class GateMeans(Response):
    input: list[float]
    forget: list[float]
    output: list[float]


class Gates(Response):
    model: str
    units: list[int] = Field(description="the hidden units shown: those whose gates vary most over the tokens")
    input: list[list[float]] = Field(description="token x unit")
    forget: list[list[float]]
    output: list[list[float]]
    mean: GateMeans = Field(description="each gate's mean over all units, per token")


class Gradients(Response):
    tokens: list[str]
    definition: str
    directions: int = Field(description="K, random directions of the Frobenius-norm estimate")
    curves: list[GradientCurve]
    gates: Gates | None = Field(None, description="the first LSTM's gates per token (None without an LSTM)")


class RecurrenceRequest(TextRequest):
    model: str | None = Field(None, description="a recurrent model (GET /api/models: `recurrent`); default: "
                                                "the first plain recurrent model (no attention, no gates)",
                              examples=["rnn"])


class Recurrence(Response):
    model: str
    tokens: list[str] = Field(description="the source pieces, in reading order")
    equation: str = Field(description="the recurrence the encoder runs")
    hidden_size: int = Field(description="H, units in the hidden state")
    rule: str = Field(description="how the units shown were chosen")
    units: list[int] = Field(description="the hidden units shown, ascending")
    states: list[list[float]] = Field(description="token x unit: h_t after each token, for `units`")
    change: list[float] = Field(description="per token: ||h_t - h_(t-1)|| over all H units (h_(-1) = 0)")
    norm: list[float] = Field(description="per token: ||h_t|| over all H units")

    model_config = ConfigDict(json_schema_extra={"examples": [
        {"model": "rnn", "tokens": ["▁Je", "▁mange", "▁du", "▁pain", "."],
         "equation": "h_t = tanh(W [x_t ; h_(t-1)] + b), h_(-1) = 0", "hidden_size": 512,
         "rule": "the 32 units (all when there are fewer) whose h_t varies most over the sentence's tokens "
                 "(population variance), in ascending unit order",
         "units": [3, 17], "states": [[0.91, -0.2], [-0.5, 0.77], [0.1, 0.6], [-0.8, 0.3], [0.95, -0.99]],
         "change": [10.2, 9.1, 8.7, 9.9, 11.0], "norm": [10.2, 11.5, 11.9, 12.4, 13.0]}]})


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


class TimingRequest(Request):
    lengths: list[int] | None = Field(None, max_length=64, description="input lengths in pieces, 2 to "
                                      f"{MAX_TIMING_LENGTHS} different ones, each 1 to {MAX_TIMING_LENGTH} "
                                      "(default: 10, 18, 32, 56, 100, 178, "
                                      "316, 562, 1000)", examples=[[10, 100, 1000]])
    refresh: bool = Field(False, description="measure again even when a result for this device and these "
                                             "lengths is kept")
    recurrent: str | None = Field(None, description="a model with an LSTM encoder (default: the first loaded)")
    parallel: str | None = Field(None, description="a model without recurrence (default: the first loaded)")


class LengthTiming(Response):
    length: int = Field(description="input pieces")
    median_ms: float = Field(description="median wall time of one encoder call, in milliseconds")
    repeats: int = Field(description="calls timed")


class TimingRoles(Response):
    recurrent: str = Field(description="the model whose LSTM encoder was timed")
    parallel: str = Field(description="the model whose encoder attends without recurrence")


class Timings(Response):
    device: str = Field(description="where the models run: cpu or cuda")
    device_name: str
    torch_threads: int = Field(description="intra-op threads of every timed call")
    measured_at: str = Field(description="when the measurement ended (UTC, ISO 8601); a kept result keeps it")
    seconds: float = Field(description="how long the measurement took")
    limit_s: float = Field(description="no pass over the lengths started after this many seconds")
    max_repeats: int
    complete: bool = Field(description="false when the time limit left some lengths fewer than max_repeats")
    definition: str
    lengths: list[int]
    encoders: dict[str, str] = Field(description="per model, its encoder's size")
    timings: dict[str, list[LengthTiming]] = Field(description="per model, one entry per length")
    growth: dict[str, float] = Field(description="per model, time at the longest length / time at the shortest")
    roles: TimingRoles
    parallel_longest_over_recurrent_shortest: float = Field(
        description="time(parallel, longest) / time(recurrent, shortest)")
    recurrent_over_parallel_longest: float = Field(
        description="time(recurrent, longest) / time(parallel, longest)")

    model_config = ConfigDict(json_schema_extra={"examples": [
        {"device": "cpu", "device_name": "x86_64 CPU, 2 cores", "torch_threads": 1,
         "measured_at": "2025-01-01T12:00:00+00:00", "seconds": 19.6, "limit_s": 20.0, "max_repeats": 7,
         "complete": False, "definition": "...", "lengths": [10, 100, 1000],
         "encoders": {"lstm": "LSTM encoder: 1 layer, hidden size 512, embeddings 256",
                      "transformer": "Transformer encoder: 3 layers, d_model 256, 4 heads, d_ff 1024; "
                                     "sinusoidal positions stored for 512, computed beyond"},
         "timings": {"lstm": [{"length": 10, "median_ms": 2.9, "repeats": 7},
                              {"length": 100, "median_ms": 32.1, "repeats": 7},
                              {"length": 1000, "median_ms": 307.6, "repeats": 6}],
                     "transformer": [{"length": 10, "median_ms": 6.8, "repeats": 7},
                                     {"length": 100, "median_ms": 9.2, "repeats": 7},
                                     {"length": 1000, "median_ms": 201.7, "repeats": 6}]},
         "growth": {"lstm": 106.1, "transformer": 29.66},
         "roles": {"recurrent": "lstm", "parallel": "transformer"},
         "parallel_longest_over_recurrent_shortest": 69.55, "recurrent_over_parallel_longest": 1.525}]})


class TimingStatus(Response):
    running: bool
    done: int = Field(description="calls timed so far by the running (or last) measurement")
    total: int = Field(description="calls it would time at most (fewer when the time limit stops it)")
    limit_s: float
    elapsed_s: float | None = Field(description="seconds since the running measurement began; null when "
                                                "none runs")


class LagGradientsRequest(Request):
    lag: int = Field(description="one of the lags the tiny models were trained at (GET /api/long-lag)")
    filler: Literal["blank", "noise"] = Field("blank", description="what fills the lag")
    initialized: bool = Field(True, description="also the same models before training")


class LossPoint(Response):
    step: int
    loss: float


class LagRun(Response):
    filler: Literal["blank", "noise"] = Field(description="blank: one token repeated; noise: random tokens")
    cell: Literal["rnn", "lstm"]
    lag: int
    accuracy: float = Field(description="share of held-out sequences whose signal the model named")
    steps: int
    seconds: float
    curve: list[LossPoint] = Field(description="training loss every 25 steps")


class LagTask(Response):
    symbols: int = Field(description="signals the model must name")
    noise_tokens: int = Field(description="distinct tokens a noise filler draws from")
    d_embed: int
    d_hidden: int


class LongLagResults(Response):
    chance: float
    hardware: str = Field(description="where the tiny models were trained")
    eval_sequences: int
    max_steps: int
    task: LagTask
    runs: list[LagRun]
    cells: list[str] = Field(description="the cells trained, in the story's order (plain first)")
    chance_lag: dict[str, dict[str, int | None]] = Field(
        description="per filler and cell, the shortest lag whose accuracy is within 3 standard errors "
                    "of chance (null: above chance at every lag tried)")


class LagGradients(Response):
    lag: int
    filler: str
    tokens: list[int] = Field(description="the task sequence read: signal, distractors, query")
    definition: str
    curves: list[GradientCurve]


class ErrorBody(Response):
    detail: str


SWITCHED_MODEL = Field(None, description="a model with positional and head switches (GET /api/models: "
                                         "`switches`); default: the first loaded", examples=["transformer"])


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
    kind: Literal["encoder", "decoder", "cross"]
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


class OrderRequest(TextRequest):
    model: str | None = SWITCHED_MODEL
    permutation: list[int] | None = Field(
        None, max_length=1000, description="a permutation of the source pieces' indices: shuffled[i] = "
                                           "original[permutation[i]] (default: the words shuffled with `seed`)",
        examples=[[3, 1, 0, 2, 4]])
    seed: int = Field(0, ge=0, le=2**31 - 1, description="seed of the word shuffle (without `permutation`)")
    layer: int = Field(0, ge=0, description="encoder layer whose maps are returned (every head)")
    max_position: int | None = Field(None, ge=1, le=512, description="rows of the positional table and its "
                                                                    "similarity (default: the source length)")


class OrderCheck(Response):
    positional: bool
    max_abs_difference: float = Field(description="over every layer and head (3 significant digits)")
    per_layer: list[float] = Field(description="the same, per encoder layer")
    original: list[list[list[float]]] = Field(description="head x query x key, `layer` of the original")
    shuffled: list[list[list[float]]] = Field(description="head x query x key, `layer` of the shuffle")


class PositionalTable(Response):
    positions: int
    dimensions: int
    table: list[list[float]] = Field(description="position x dimension: PE[pos, 2i] = sin(pos / 10000^(2i/d)), "
                                                 "PE[pos, 2i+1] = cos(same)")
    similarity: list[list[float]] = Field(description="position x position: PE(i) . PE(j)")


class Order(Response):
    model: str
    source_tokens: list[str]
    shuffled_tokens: list[str]
    shuffled_text: str
    permutation: list[int]
    definition: str
    layer: int
    maps_shown: str
    checks: dict[Literal["pe_off", "pe_on"], OrderCheck]
    translations: dict[Literal["pe_off", "pe_on"], dict[Literal["original", "shuffled"], str]] = Field(
        description="greedy translations of both sentences with positional encoding off and on")
    positional_encoding: PositionalTable


class HeadsRequest(TextRequest):
    model: str | None = SWITCHED_MODEL
    heads_off: list[HeadSwitch] = Field([], max_length=64, description="heads switched off",
                                        examples=[[{"kind": "cross", "layer": 2, "head": 1}]])
    reference: str | None = Field(None, description="a recurrent model with attention whose alignment ranks "
                                                    "the cross heads (default: lstm-additive when loaded)",
                                  examples=["lstm-additive"])


class HeadContribution(Response):
    kind: Literal["encoder", "decoder", "cross"]
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
    kind: Literal["encoder", "decoder", "cross"]
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


class PredictRequest(TextRequest):
    model: str | None = Field(None, description="any loaded model (GET /api/models); default: the first with "
                                                "`switches` (the Transformer)", examples=["transformer"])
    prefix: list[Annotated[str, Field(min_length=1, max_length=100)]] = Field(
        [], max_length=1000,
        description="target pieces to force first, spelt as in `target_tokens` and `steps[].top[].token` "
                    "(\"▁\" starts a word): at most `limits.max_target_tokens`; a piece outside the "
                    "vocabulary, <pad>, <bos> or <eos> is 422",
        examples=[["▁We"]])
    top_k: int = Field(5, ge=1, le=10, description="next pieces reported per step")
    beam_size: int = Field(1, ge=1, le=MAX_BEAM_SIZE,
                           description=f"1: greedy search; 2-{MAX_BEAM_SIZE}: beam search (with the prefix "
                                       "too: every hypothesis starts with it)")


class PredictedStep(Step):
    forced: bool = Field(description="a piece of the prefix, not the search's choice")
    probability: float = Field(description="the model's probability of the chosen piece at this step")


class BeamNodeOut(Response):
    token: str = Field(description="the piece added to the parent (<eos>: the hypothesis ends)")
    parent: int | None = Field(None, description="index in the previous step's nodes; absent (null) at step 0")
    log_prob: float = Field(description="cumulative log-probability")
    score: float = Field(description="log_prob after the length penalty")
    status: Literal["kept", "finished", "dropped", "forced"]
    rank: int | None = Field(None, description="index in `candidates` of the hypothesis ending here, else "
                                               "absent (null)")


class Prediction(Translation):
    prefix: list[str]
    beam_size: int
    definition: dict[str, str]
    steps: list[PredictedStep]
    tree: list[list[BeamNodeOut]] | None = Field(None, description="with beam_size > 1: per step, the "
                                                                   "hypotheses considered")

    model_config = ConfigDict(json_schema_extra={"examples": [
        {"model": "transformer", "translation": "We eat bread.",
         "source_tokens": ["▁Je", "▁mange", "▁du", "▁pain", "."],
         "target_tokens": ["▁We", "▁eat", "▁bread", "."], "finished": True, "prefix": ["▁We"],
         "beam_size": 1, "definition": {},
         "steps": [{"token": "▁We", "forced": True, "probability": 0.01,
                    "top": [{"token": "▁I", "probability": 0.97}]},
                   {"token": "▁eat", "forced": False, "probability": 0.9,
                    "top": [{"token": "▁eat", "probability": 0.9}]}]}]})


class SnapshotRequest(TextRequest):
    model: str = Field(description="a model whose `snapshots` (GET /api/models) are not empty",
                       examples=["transformer"])
    step: int = Field(ge=0, description="a training step of the model's `snapshots`: 0 is the seeded "
                                        "initialization, the last one the shipped weights", examples=[0])
    kinds: list[Literal["cross", "encoder", "decoder"]] = Field(
        ["cross", "encoder", "decoder"], min_length=1, max_length=3, description="which maps to return")


class Snapshot(Attention):
    snapshot: SnapshotPoint


TRAIN_LIMITS = LiveLimits()


class TrainRequest(Request):
    """A "train it yourself" run: every field optional, the defaults (GET /api/train) filling in."""

    task: Literal["reverse", "copy"] | None = Field(None, description="write the sequence back reversed, "
                                                                     "or copied")
    length: int | None = Field(None, ge=TRAIN_LIMITS.min_length, le=TRAIN_LIMITS.max_length,
                               description="symbols per sequence")
    contestants: list[Literal[CONTESTANTS]] | None = Field(
        None, min_length=1, max_length=TRAIN_LIMITS.max_contestants, json_schema_extra={"uniqueItems": True},
        description="the architectures trained, each at most once")
    steps: int | None = Field(None, ge=1, le=TRAIN_LIMITS.max_steps,
                              description="optimizer steps per contestant: the budget")
    seconds: float | None = Field(None, gt=0, le=TRAIN_LIMITS.max_seconds,
                                  description="per contestant: a guard for slow machines")
    seed: int | None = Field(None, ge=0, le=TRAIN_LIMITS.max_seed,
                             description="the same seed and settings give the same run, number for number")


class TrainContestant(Response):
    name: str
    attention: str | None = Field(description="null for the bottleneck, else how it looks back")


class SweepSettings(Response):
    steps: int
    seed: int
    alphabet: int
    width: int
    batch: int
    learning_rate: float
    held_out: int


class SweepRow(Response):
    task: Literal["reverse", "copy"]
    length: int
    contestant: Literal[CONTESTANTS]
    accuracy: float = Field(description="share of held-out sequences written back exactly")
    token_accuracy: float = Field(description="share of held-out symbols written back right")
    steps: int
    seconds: float
    stopped_by: Literal["steps", "seconds", "reader"]


class Sweep(Response):
    settings: SweepSettings
    rows: list[SweepRow]


class TrainProbe(Response):
    source: list[int] = Field(description="the probe pair's source symbols, whose map is drawn as it trains")
    target: list[int]


class TrainStart(Response):
    """The first line of a run: its settings, chance, and the probe pair."""

    settings: LiveConfig
    chance: float = Field(description="exact-sequence accuracy of guessing: (1 / alphabet)^length")
    probe: TrainProbe


class TrainProgress(Response):
    """A contestant's turn: where it stands on the held-out sequences."""

    contestant: Literal[CONTESTANTS]
    step: int
    seconds: float = Field(description="training seconds so far")
    loss: float = Field(description="mean training loss over the turn")
    accuracy: float = Field(description="share of held-out sequences written back exactly")
    token_accuracy: float = Field(description="share of held-out symbols written back right")
    map: list[list[float]] | None = Field(None, description="the probe's cross-attention (output x source, "
                                                            "the last layer's heads averaged); null without "
                                                            "attention")


class TrainFinal(TrainProgress):
    """A contestant's last line."""

    done: Literal[True]
    stopped_by: Literal["steps", "seconds", "reader"]
    attention: str | None = Field(description="null for the bottleneck, else how it looks back")
    first_losses: list[float] = Field(description="its first training losses, step by step")


class Standing(Response):
    contestant: Literal[CONTESTANTS]
    accuracy: float


class Verdict(Response):
    best_attention: Standing | None
    best_bottleneck: Standing | None
    gap: float | None = Field(None, description="best_attention's accuracy minus best_bottleneck's")


class TrainSummary(Response):
    finished: Literal[True]
    summary: Verdict


class ProcessEnd(Response):
    peak_mb: float = Field(description="the training process's largest resident memory")
    exit: int | None = Field(description="its exit status")


class TrainEnd(Response):
    """The last line: the training process's own account, and why it was stopped if it was."""

    process: ProcessEnd
    error: str | None = None


# A line of POST /api/train: each is checked against this as it passes through the server
TrainLine = TrainStart | TrainFinal | TrainProgress | TrainSummary | TrainEnd


class TrainInfo(Response):
    tasks: list[str]
    contestants: list[TrainContestant]
    defaults: LiveConfig
    limits: LiveLimits
    slots: int = Field(description="runs this replica takes at once")
    running: int = Field(description="runs going on now")
    reference: Sweep | None = Field(description="the shipped sweep: final accuracy against length for each "
                                                "contestant at the default budget")


class RecapRow(Response):
    """One row of chapter 11's recap: its chapter's one number on the reader's sentence, in a sentence."""

    chapter: int = Field(ge=1, le=11, description="the chapter the row recaps (its number in the story)")
    text: str = Field(description="the row's sentence, with the number measured on the text")


class Recap(Response):
    """POST /api/recap: the recap rows that depend on the text, for the chapters whose models are loaded.
    (The text is not echoed: a client knows what it sent.)"""

    rows: list[RecapRow]
