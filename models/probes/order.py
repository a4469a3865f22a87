"""The order chapter: attention alone treats its input as a set.

Without positional encoding, a Transformer encoder is permutation-equivariant: shuffle the source
pieces by a permutation P (shuffled[i] = original[P[i]]) and every self-attention map of the
shuffled sentence is the original's with rows and columns permuted the same way,
A_shuffled[i, j] = A_original[P[i], P[j]], up to float rounding. The sinusoidal encoding
(`models.transformer.sinusoidal_table`) adds position to each vector, so the identity breaks.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

import torch

from models.transformer import sinusoidal_table


def word_units(pieces: list[str]) -> list[list[int]]:
    """Piece indices grouped into words: a word starts at a piece that begins with "▁"; a piece
    without letters or digits (punctuation) stands alone."""
    units: list[list[int]] = []
    alone = [not any(ch.isalnum() for ch in piece) for piece in pieces]
    for i, piece in enumerate(pieces):
        if i == 0 or piece.startswith("▁") or alone[i] or alone[i - 1]:
            units.append([i])
        else:
            units[-1].append(i)
    return units


def shuffle_words(pieces: list[str], seed: int) -> list[int]:
    """A seeded shuffle of the words (pieces of a word stay together, in order), as a permutation
    of piece indices: shuffled[i] = original[permutation[i]]. It moves something whenever there are
    two words or more (a draw that moves nothing is drawn again, up to 20 times)."""
    units = word_units(pieces)
    rng = random.Random(seed)
    order = list(range(len(units)))
    for _ in range(20):
        rng.shuffle(order)
        if len(units) < 2 or order != sorted(order):
            break
    return [i for u in order for i in units[u]]


def check_permutation(permutation: list[int], length: int) -> None:
    if sorted(permutation) != list(range(length)):
        raise ValueError(f"the permutation must hold each of 0 to {length - 1} once ({length} source pieces)")


def permute_maps(maps: torch.Tensor, permutation: list[int]) -> torch.Tensor:
    """(..., S, S) maps with rows and columns taken in `permutation`'s order: out[i, j] = maps[P[i], P[j]]."""
    index = torch.tensor(permutation, device=maps.device)
    return maps.index_select(-2, index).index_select(-1, index)


@dataclass
class OrderCheck:
    positional: bool
    original: torch.Tensor  # (L, h, S, S): encoder self-attention of the sentence
    shuffled: torch.Tensor  # (L, h, S, S): of the shuffled sentence
    difference: torch.Tensor  # (L,): max |shuffled - permuted original| per layer
    max_abs_difference: float  # over every layer and head


def encoder_maps(model, src_ids: list[int], positional: bool) -> torch.Tensor:
    device = next(model.parameters()).device
    with torch.inference_mode():
        src = torch.tensor([src_ids], device=device)
        _, internals = model.encode_with_internals(src, positional=positional)
    return internals["attentions"]["encoder"][0]  # (L, h, S, S)


def order_check(model, src_ids: list[int], permutation: list[int], positional: bool) -> OrderCheck:
    """The encoder's self-attention on `src_ids` and on its shuffle, with positional encoding on or
    off, and how far the shuffled maps are from the original ones permuted."""
    check_permutation(permutation, len(src_ids))
    original = encoder_maps(model, src_ids, positional)
    shuffled = encoder_maps(model, [src_ids[i] for i in permutation], positional)
    gap = (shuffled.double() - permute_maps(original, permutation).double()).abs()
    per_layer = gap.flatten(1).max(1).values
    return OrderCheck(positional, original, shuffled, per_layer, float(per_layer.max()))


@dataclass
class Positions:
    table: torch.Tensor  # (n, d): PE[pos, dim]
    similarity: torch.Tensor  # (n, n): PE(i) . PE(j)


def positions(n: int, d_model: int) -> Positions:
    """The sinusoidal table the model adds (its first n rows) and the dot products of its rows:
    PE(i) . PE(j) = sum_k cos((i - j) w_k), a function of i - j only, largest at i = j (d/2)."""
    table = sinusoidal_table(n, d_model)
    return Positions(table, table @ table.T)
