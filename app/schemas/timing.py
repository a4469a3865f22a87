"""POST /api/timing and GET /api/timing/status (the parallel chapter): recurrent against parallel encoders."""

from __future__ import annotations

from typing import Literal

from pydantic import ConfigDict, Field

from app.limits import MAX_TIMING_LENGTH, MAX_TIMING_LENGTHS
from app.schemas.base import Request, Response


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


class EncoderSize(Response):
    """An encoder's size in numbers (the page phrases them; `encoders` says them in English)."""
    cell: Literal["rnn", "lstm", "transformer"]
    layers: int
    width: int = Field(description="the hidden size of a recurrent encoder, d_model of a Transformer's")
    embeddings: int | None = Field(None, description="a recurrent encoder's embedding size (no Transformer's)")
    heads: int | None = Field(None, description="a Transformer's heads per layer (not a recurrent one's)")
    feed_forward: int | None = Field(None, description="a Transformer's d_ff (not a recurrent one's)")
    positions: int | None = Field(None, description="the sinusoidal positions a Transformer stores, computed "
                                                    "beyond (not a recurrent one's)")


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
    encoders: dict[str, str] = Field(description="per model, its encoder's size, in English")
    encoder_sizes: dict[str, EncoderSize] = Field(description="per model, the same as numbers")
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
         "encoder_sizes": {"lstm": {"cell": "lstm", "layers": 1, "width": 512, "embeddings": 256, "heads": None,
                                    "feed_forward": None, "positions": None},
                           "transformer": {"cell": "transformer", "layers": 3, "width": 256, "embeddings": None,
                                           "heads": 4, "feed_forward": 1024, "positions": 512}},
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
