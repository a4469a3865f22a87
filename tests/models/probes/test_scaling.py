"""The scaling chapter's probe: the sampled curves behave as the algebra says, and the per-head queries and
keys rebuilt through the layers' own projections give the weights the model returns."""

from __future__ import annotations

import math

import pytest
import torch

from models.decoding import greedy
from models.probes.scaling import model_scores, saturation, softmax_stats
from tests.models.probes import tiny_transformer

SRC = [5, 9, 4, 7, 11, 6]


def test_unscaled_scores_spread_like_sqrt_dk_and_saturate_the_softmax():
    rows = {(r.d_k, r.scaled): r for r in saturation([4, 64, 1024], keys=16, draws=400)}
    for d_k in (4, 64, 1024):
        assert rows[d_k, False].score_std == pytest.approx(math.sqrt(d_k), rel=0.1)
        assert rows[d_k, True].score_std == pytest.approx(1.0, rel=0.1)
    assert rows[1024, False].max_weight > 0.95  # saturated: nearly one-hot
    assert rows[1024, False].gradient < rows[1024, True].gradient / 3  # and its gradient nearly gone
    assert rows[4, False].max_weight < rows[64, False].max_weight < rows[1024, False].max_weight
    for d_k in (64, 1024):  # the scale keeps the softmax where it was at any width
        assert rows[d_k, True].max_weight == pytest.approx(rows[4, True].max_weight, abs=0.06)
        assert rows[d_k, True].entropy > 2 * rows[d_k, False].entropy
    assert saturation([8], seed=3) == saturation([8], seed=3)  # seeded


def test_softmax_stats_are_the_definitions():
    scores = torch.tensor([[0.3, -1.0, 2.0, 0.5]])
    top, entropy, gradient = softmax_stats(scores)
    p = torch.softmax(scores.double(), -1)[0]
    jacobian = torch.autograd.functional.jacobian(lambda s: torch.softmax(s, -1), scores[0].double())
    torch.testing.assert_close(jacobian, torch.diag(p) - torch.outer(p, p))
    assert float(gradient[0]) == pytest.approx(float(jacobian.norm()))
    assert float(top[0]) == pytest.approx(float(p.max()))
    assert float(entropy[0]) == pytest.approx(float(-(p * p.log()).sum()))
    assert float(softmax_stats(torch.tensor([[0.0, 0.0]]))[2][0]) == pytest.approx(0.5)


def test_the_rebuilt_queries_and_keys_give_the_model_s_own_weights():
    model = tiny_transformer()
    with torch.inference_mode():
        decoded = greedy(model, SRC, max_len=5)
    heads, weights = model_scores(model, SRC, decoded.tokens)
    T = len(decoded.tokens) + 1
    for kind in ("encoder", "decoder", "cross"):
        torch.testing.assert_close(weights[kind], decoded.output.attentions[kind][0], atol=1e-5, rtol=0)
    assert len(heads) == 3 * 2 * 4 and {h.d_k for h in heads} == {8}
    for h in heads:
        assert h.raw_std == pytest.approx(h.scaled_std * math.sqrt(8), rel=1e-6)
        assert 0 < h.max_weight <= 1 and h.entropy >= 0
    assert weights["decoder"].shape == (2, 4, T, T)
