"""The heads chapter's probe: head contributions add up to the attention sub-layer's output with W_o's
bias, a silenced head adds exactly zero, rollout rows sum to 1, the overlap score, the log-prob."""

from __future__ import annotations

import pytest
import torch

from models.architectures import build
from models.config import Seq2SeqConfig
from models.decoding import beam_search, greedy, sequence_log_prob
from models.probes.heads import head_calls, overlap, reference_alignment, rollout
from tests.models.probes import tiny_transformer

SRC = [5, 9, 4, 7, 11, 6]


def test_contributions_sum_with_the_bias_to_the_sublayer_output_and_a_silenced_head_adds_zero():
    model = tiny_transformer()
    off = model.head_mask([("cross", 1, 2), ("encoder", 0, 0)])
    for mask in (None, off):
        calls = head_calls(model, SRC, [7, 8, 9], mask)
        assert [(c.kind, c.layer) for c in calls] == [("encoder", 0), ("encoder", 1), ("decoder", 0),
                                                       ("cross", 0), ("decoder", 1), ("cross", 1)]
        for call in calls:
            torch.testing.assert_close(call.contributions.sum(0) + call.bias, call.output, atol=1e-5, rtol=0)
    calls = {(c.kind, c.layer): c for c in head_calls(model, SRC, [7, 8, 9], off)}
    assert torch.count_nonzero(calls["cross", 1].contributions[2]) == 0
    assert torch.count_nonzero(calls["encoder", 0].contributions[0]) == 0
    assert calls["cross", 1].on.tolist() == [1, 1, 0, 1]
    assert torch.count_nonzero(calls["cross", 1].contributions[1]) > 0


def test_the_weights_are_the_model_s():
    model = tiny_transformer()
    with torch.inference_mode():
        decoded = greedy(model, SRC, max_len=4)
    calls = head_calls(model, SRC, decoded.tokens)
    cross = torch.stack([c.weights for c in calls if c.kind == "cross"])
    torch.testing.assert_close(cross, decoded.output.attentions["cross"][0], atol=1e-5, rtol=0)


def test_rollout_rows_sum_to_one_and_follow_the_definition():
    weights = torch.softmax(torch.randn(3, 4, 5, 5, generator=torch.Generator().manual_seed(0)), -1)
    rolled = rollout(weights)
    torch.testing.assert_close(rolled.sum(-1), torch.ones(3, 5, dtype=torch.float64))
    first = 0.5 * weights[0].double().mean(0) + 0.5 * torch.eye(5, dtype=torch.float64)
    torch.testing.assert_close(rolled[0], first)
    torch.testing.assert_close(rolled[1], (0.5 * weights[1].double().mean(0) + 0.5 * torch.eye(5)) @ first)
    none_on = rollout(weights, torch.zeros(3, 4))
    torch.testing.assert_close(none_on[-1], torch.eye(5, dtype=torch.float64))


def test_overlap_and_the_reference_alignment():
    a = torch.tensor([[0.5, 0.5, 0.0], [1.0, 0.0, 0.0]])
    assert overlap(a, a) == pytest.approx(1.0)
    assert overlap(a, torch.tensor([[0.0, 0.0, 1.0], [0.0, 1.0, 0.0]])) == 0
    assert overlap(a, torch.tensor([[0.5, 0.0, 0.5], [0.5, 0.5, 0.0]])) == pytest.approx(0.5)
    torch.manual_seed(0)
    lstm = build(Seq2SeqConfig(vocab_size=60, cell="lstm", attention="additive", d_embed=8, d_hidden=16,
                               d_attn=8)).eval()
    with torch.inference_mode():
        decoded = greedy(lstm, SRC, max_len=4)
    torch.testing.assert_close(reference_alignment(lstm, SRC, decoded.tokens),
                               decoded.output.attentions["cross"][0, 0, 0])


def test_the_sequence_log_prob_is_the_beam_s():
    model = tiny_transformer()
    with torch.inference_mode():
        decoded = beam_search(model, SRC, beam_size=3, max_len=5)
        for hypothesis in decoded.beam:
            assert sequence_log_prob(model, SRC, hypothesis.tokens, hypothesis.finished) == pytest.approx(
                hypothesis.log_prob, abs=1e-4)
