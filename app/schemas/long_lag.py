"""GET /api/long-lag and POST /api/long-lag/gradients (the gradients chapter): tiny cells trained across
a lag."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from app.schemas.base import Request, Response
from app.schemas.gradients import GradientCurve


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
