"""POST /api/recurrence (the recurrence chapter): a recurrent encoder's hidden state, piece by piece."""

from __future__ import annotations

from pydantic import ConfigDict, Field

from app.schemas.base import Response, TextRequest


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
