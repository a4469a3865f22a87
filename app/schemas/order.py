"""POST /api/order (the order chapter): a shuffled sentence with the encoder's positional encoding off
and on."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from app.schemas.base import SWITCHED_MODEL, Response, TextRequest


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
