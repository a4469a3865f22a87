"""POST /api/predict (the prediction chapter): next-piece probabilities, a forced prefix, and beam
search's tree."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import ConfigDict, Field

from app.limits import MAX_BEAM_SIZE
from app.schemas.base import Response, TextRequest
from app.schemas.translation import Step, Translation


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
