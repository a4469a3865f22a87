"""POST /api/gradients (the gradients chapter): gradient norm against distance, and the LSTM's gates."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator

from app.schemas.base import Response, TextRequest, once_each


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
