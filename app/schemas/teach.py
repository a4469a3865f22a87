"""GET and POST /api/teach (the training chapter's "teach it a pair"): a run's settings, and the lines it
streams as NDJSON (models/teach.py writes them, the server checks each against these shapes)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from app.schemas.base import EXAMPLE_TEXT, Request, Response
from app.schemas.live import ProcessEnd
from models.teach_config import REHEARSAL_PAIRS, TeachConfig, TeachLimits

TEACH_LIMITS = TeachLimits()
DEFAULTS = TeachConfig(text="", target="")


class TeachRequest(Request):
    text: str = Field(description="the French sentence, 1 to `limits.max_chars` (GET /api/health) characters "
                                  "after trimming white space and after normalising (422 naming `text`)",
                      examples=[EXAMPLE_TEXT])
    target: str = Field(description=f"the English the reader wants, 1 to {TEACH_LIMITS.max_target_chars} "
                                    "characters after trimming white space and after normalising (422 naming "
                                    "`target`)", examples=["I'm eating bread."])
    model: str | None = Field(None, description="a loaded model (GET /api/teach: `models`); default "
                                                f"{DEFAULTS.model!r}", examples=[DEFAULTS.model])
    steps: int | None = Field(None, ge=1, le=TEACH_LIMITS.max_steps,
                              description=f"optimizer steps on the pair; default {DEFAULTS.steps}")
    rehearsal: bool | None = Field(None, description=f"mix {REHEARSAL_PAIRS} pairs of the training split into "
                                                     "every step; default false")


class TeachInfo(Response):
    models: list[str] = Field(description="the loaded models a reader may teach")
    defaults: TeachConfig
    limits: TeachLimits
    rehearsal_pairs: int = Field(description="training pairs mixed into every step when rehearsal is on")
    held_out: int = Field(description="held-out test pairs scored before and after")
    slots: int = Field(description="runs this replica takes at once")
    running: int
    waiting: int


class TeachReading(Response):
    translation: str = Field(description="the copy's greedy translation of the sentence")
    pieces: list[str] = Field(description="its pieces, then </s> when it ended")
    map: list[list[float]] | None = Field(description="cross-attention, output piece x source piece (the last "
                                                      "layer's heads averaged); null without attention")


class TeachEvaluation(Response):
    bleu: float = Field(description="corpus BLEU of the copy on the held-out test pairs")
    pairs: int
    examples: list[str] = Field(description="its translations of the example sentences")


class TeachExample(Response):
    source: str
    reference: str


class TeachStartLine(Response):
    model: str
    source: list[str] = Field(description="the sentence's pieces")
    target: list[str] = Field(description="the target's pieces")
    loss: float = Field(description="nats per target piece (its end included) before any step")
    reading: TeachReading
    before: TeachEvaluation
    examples: list[TeachExample]


class TeachStart(Response):
    """The first line: the pair as pieces, the untouched copy's translation, map and scores."""

    start: TeachStartLine


class TeachLayer(Response):
    name: str = Field(description='a layer: "embed", "encoder", "decoder_layers.1", ...')
    gradient: float = Field(description="the L2 norm of its gradient, before clipping")
    moved: float = Field(description="the L2 norm of the change the step made to its weights")


class TeachStep(Response):
    """A line per step."""

    step: int
    loss: float = Field(description="nats per target piece of the pair, as this step's gradient was computed")
    rehearsal_loss: float | None = Field(description="the same on its rehearsal pairs; null without rehearsal")
    layers: list[TeachLayer]
    reading: TeachReading = Field(description="the translation and its map after the step")
    learned: bool = Field(description="the translation is the target")


class TeachEndLine(Response):
    after: TeachEvaluation
    bleu_change: float = Field(description="held-out BLEU after minus before")
    learned_at: int | None = Field(description="the first step whose translation was the target")


class TeachEnd(Response):
    """After the steps: the copy's scores again."""

    end: TeachEndLine


class TeachDone(Response):
    """The last line: the process's own account, and why it was stopped if it was."""

    done: Literal[True]
    process: ProcessEnd
    error: str | None = None


# A line of the teaching process, passed on by POST /api/teach: each is checked against this as it passes
TeachLine = TeachStart | TeachStep | TeachEnd
