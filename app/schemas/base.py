"""What every request and answer shares: the strict request base, the answer base that refuses a
key it does not name and a non-finite number, the attention kinds, and the fields several chapters
ask for in the same words."""

from __future__ import annotations

import json
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from app.defaults import TEXT as EXAMPLE_TEXT

# The three kinds of attention map: cross (decoder queries over the source's keys), encoder and
# decoder (self-attention; the decoder's causal)
AttentionKind = Literal["cross", "encoder", "decoder"]


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
    kind: AttentionKind
    layer: int = Field(ge=0)
    head: int = Field(ge=0)


def once_each(models: list[str]) -> list[str]:
    """A list field's validator: each model named at most once."""
    if len(set(models)) != len(models):
        raise ValueError("name each model at most once")
    return models


# the body of every refusal but a 422 (whose `detail` is FastAPI's list of the fields refused) and a 499
class ErrorBody(Response):
    detail: str


SWITCHED_MODEL = Field(None, description="a model with positional and head switches (GET /api/models: "
                                         "`switches`); default: the first loaded", examples=["transformer"])
