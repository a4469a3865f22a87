"""The attention chapter's probe against the model's own attention, the definitions of softmax, blend,
temperature and entropy."""

from __future__ import annotations

import math

import pytest
import torch

from models.architectures import build
from models.config import Seq2SeqConfig
from models.decoding import greedy
from models.probes.scores import reweight, score_step, spread

SRC = [5, 9, 4, 7, 11]


def _model(attention: str):
    torch.manual_seed(0)
    config = Seq2SeqConfig(vocab_size=60, cell="lstm", attention=attention, d_embed=8, d_hidden=16, d_attn=8)
    return build(config).eval()


@pytest.mark.parametrize("attention", ["additive", "dot"])
def test_the_weights_are_those_greedy_search_made_the_translation_with(attention):
    model = _model(attention)
    with torch.inference_mode():
        decoded = greedy(model, SRC, max_len=6)
    cross = decoded.output.attentions["cross"][0, 0, 0]  # (T, S)
    for row in range(len(decoded.tokens) + 1):
        scored = score_step(model, SRC, decoded.tokens, row)
        assert torch.equal(scored.weights, cross[row])
        assert torch.equal(torch.softmax(scored.scores, -1), scored.weights)  # scores before the softmax
        torch.testing.assert_close(scored.context, scored.weights @ scored.states)  # the blend
        assert scored.states.shape == (len(SRC), 16)


def test_the_scores_are_the_formulas():
    model = _model("dot")
    scored = score_step(model, SRC, [7, 8], 2)
    with torch.inference_mode():
        memory = model.encode(torch.tensor([SRC]))
        s, _ = model.decoder_states(memory, torch.tensor([[1, 7, 8]]))  # teacher-forced: BOS, 7, 8
    assert scored.formula == "s . h_j"
    torch.testing.assert_close(scored.scores, memory.keys[0] @ s[0, 2])
    additive = _model("additive")
    a = additive.attention
    scored = score_step(additive, SRC, [], 0)
    with torch.inference_mode():
        memory = additive.encode(torch.tensor([SRC]))
        s, _ = additive.decoder_states(memory, torch.tensor([[1]]))
        expected = a.v.weight[0] @ torch.tanh(a.W(s[0, 0]) + a.U(memory.keys[0])).T
    assert scored.formula == "v^T tanh(W s + U h_j)"
    torch.testing.assert_close(scored.scores, expected)


def test_a_row_past_the_end_and_a_model_without_attention_are_refused():
    with pytest.raises(ValueError, match="row"):
        score_step(_model("dot"), SRC, [7, 8], 3)
    torch.manual_seed(0)
    with pytest.raises(ValueError, match="attention"):
        score_step(build(Seq2SeqConfig(vocab_size=60, cell="lstm", d_embed=8, d_hidden=16)).eval(), SRC, [], 0)


def test_temperature_sharpens_and_flattens_and_one_changes_nothing():
    scores = torch.tensor([1.0, 3.0, 0.5, 2.0])
    own = torch.softmax(scores, -1)
    assert torch.equal(reweight(scores, 1.0).weights, own)
    cold, hot = reweight(scores, 0.05), reweight(scores, 1000.0)
    assert cold.max_weight > 0.999 and cold.entropy < 1e-3  # a spotlight
    assert hot.entropy == pytest.approx(math.log(4), abs=1e-5)  # a fog
    assert cold.entropy < spread(own).entropy < hot.entropy
    p = own.double()
    assert spread(own).entropy == pytest.approx(float(-(p * p.log()).sum()))
    assert spread(torch.tensor([1.0, 0.0])).entropy == 0  # 0 ln 0 = 0
    with pytest.raises(ValueError):
        reweight(scores, 0.0)
