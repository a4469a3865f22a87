"""The one line's probe: Q, K, V rebuilt through the first encoder layer's own projections give the
model's own weights, and their softmax-weighted mix is the head's output in the model's pass."""

from __future__ import annotations

import math

import pytest
import torch

from models.probes.lookup import lookup
from tests.models.probes import tiny_transformer

SRC = [5, 9, 4, 7, 11, 6]


def test_the_mix_of_values_is_the_head_s_own_output():
    model = tiny_transformer()
    for head in range(4):
        found = lookup(model, SRC, head)
        S = len(SRC)
        assert found.queries.shape == found.keys.shape == found.values.shape == (S, 8) and found.d_k == 8
        torch.testing.assert_close(found.scores, found.queries @ found.keys.T / math.sqrt(8))
        torch.testing.assert_close(found.weights.sum(-1), torch.ones(S, dtype=torch.float64))
        torch.testing.assert_close(found.weights, found.model_weights, atol=1e-5, rtol=0)
        assert float((found.mix - found.model_output).abs().max()) < 1e-5
    other = lookup(model, SRC, 0)
    assert float((other.mix - lookup(model, SRC, 1).model_output).abs().max()) > 1e-3  # a head's own slice


def test_keys_and_values_are_different_projections_and_a_missing_head_is_refused():
    found = lookup(tiny_transformer(), SRC, 2)
    assert not torch.allclose(found.keys, found.values)
    with pytest.raises(ValueError, match="head must be 0 to 3"):
        lookup(tiny_transformer(), SRC, 4)
