"""GET and POST /api/train (the bottleneck chapter's "train it yourself"): a run's settings, and the lines it
streams as NDJSON."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from app.schemas.base import Request, Response
from models.live_config import CONTESTANTS, LiveConfig, LiveLimits

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


class TrainPlace(Response):
    place: int = Field(description="1: next to start")
    starts_in: int = Field(description="seconds until the run is expected to start, from the runs measured "
                                       "on this replica")


class TrainQueued(Response):
    """A line written while the run waits in the line for a training slot (again as its place moves)."""

    queued: TrainPlace


# A line of the training process, passed on by POST /api/train: each is checked against this as it
# passes through the server
TrainLine = TrainStart | TrainFinal | TrainProgress | TrainSummary | TrainEnd


class TrainInfo(Response):
    tasks: list[str]
    contestants: list[TrainContestant]
    defaults: LiveConfig
    limits: LiveLimits
    slots: int = Field(description="runs this replica takes at once")
    running: int = Field(description="runs going on now")
    waiting: int = Field(0, description="runs waiting in the line for a slot")
    reference: Sweep | None = Field(description="the shipped sweep: final accuracy against length for each "
                                                "contestant at the default budget")
