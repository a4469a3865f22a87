"""The order chapter's probe: without positional encoding the encoder is permutation-equivariant (to float
rounding); with it, it is not. The word shuffle and the sinusoidal table's similarity."""

from __future__ import annotations

import pytest
import torch

from models.probes.order import order_check, permute_maps, positions, shuffle_words, word_units
from tests.models.probes import tiny_transformer

SRC = [5, 9, 4, 7, 11, 6, 13]
PERMUTATION = [3, 0, 6, 1, 5, 2, 4]


def test_the_permutation_identity_holds_without_positions_and_fails_with_them():
    model = tiny_transformer()
    off = order_check(model, SRC, PERMUTATION, positional=False)
    on = order_check(model, SRC, PERMUTATION, positional=True)
    assert off.max_abs_difference < 1e-5
    assert on.max_abs_difference > 1e-3
    assert off.original.shape == (2, 4, 7, 7) and off.difference.shape == (2,)
    shuffled_by_hand = permute_maps(off.original, PERMUTATION)
    assert shuffled_by_hand[0, 0, 1, 2] == off.original[0, 0, 0, 6]  # out[i, j] = maps[P[i], P[j]]
    with pytest.raises(ValueError, match="permutation"):
        order_check(model, SRC, [0, 0, 1, 2, 3, 4, 5], positional=False)


def test_words_move_together_and_the_shuffle_is_seeded():
    pieces = ["▁Je", "▁mang", "e", "▁du", "▁pain", "."]
    assert word_units(pieces) == [[0], [1, 2], [3], [4], [5]]
    permutation = shuffle_words(pieces, 3)
    assert permutation == shuffle_words(pieces, 3) and sorted(permutation) == list(range(6))
    assert permutation != list(range(6))
    assert permutation.index(2) == permutation.index(1) + 1  # "▁mang" "e" stay together
    assert shuffle_words(["▁Bonjour"], 0) == [0]


def test_position_vectors_look_alike_when_near():
    p = positions(20, 32)
    assert p.table.shape == (20, 32) and p.similarity.shape == (20, 20)
    torch.testing.assert_close(p.similarity.diagonal(), torch.full((20,), 16.0))  # sin^2 + cos^2, d/2 pairs
    assert p.similarity[5, 6] > p.similarity[5, 15]
    torch.testing.assert_close(p.similarity[2, 7], p.similarity[10, 15], atol=1e-4, rtol=0)  # only i - j
