"""The recurrent translation models (models/seq2seq.py)."""

import dataclasses

import pytest
import torch

from models import checkpoint, seq2seq
from models.architectures import MODEL_NAMES, build, initialized
from models.attention import AdditiveAttention, DotAttention
from tests.tiny import tiny_config

RECURRENT = [name for name in MODEL_NAMES if name != "transformer"]


@pytest.mark.parametrize("name", RECURRENT)
@torch.no_grad()
def test_a_decoding_step_gives_exactly_what_the_unrolled_decoder_gives(name):
    """One token per sentence (every greedy and beam search step) runs the decoder's cell once
    (`step`) instead of unrolling it over a sequence of one: the same states bit for bit, for two
    sentences, from the encoder's final state on."""
    torch.manual_seed(0)
    model = build(dataclasses.replace(tiny_config(name, 40), dropout=0.0)).eval()
    memory = model.encode(torch.tensor([[5, 9, 12, 7], [8, 6, 0, 0]]))
    fast = slow = memory.state
    for token in ([1, 1], [7, 9], [8, 10], [3, 4]):
        x = model.embed(torch.tensor(token))  # (B, e)
        h, fast = model.decoder.step(x, fast)
        run = model.decoder(x.unsqueeze(1), None, slow)  # the general pass: an unrolled sequence of one
        slow = run.final
        assert torch.equal(h, run.hidden[:, 0])
        states = (fast, slow) if isinstance(fast, tuple) else ((fast,), (slow,))
        assert all(torch.equal(a, b) for a, b in zip(*states, strict=True))


@pytest.mark.parametrize("name", RECURRENT)
@torch.no_grad()
def test_decoding_token_by_token_matches_the_teacher_forced_pass(name):
    torch.manual_seed(1)
    model = build(dataclasses.replace(tiny_config(name, 40), dropout=0.0)).eval()
    src, tgt = torch.tensor([[5, 9, 12, 7], [8, 6, 0, 0]]), torch.tensor([[1, 7, 8, 3], [1, 9, 10, 4]])
    full = model(src, tgt)
    memory, cache, steps, maps = model.encode(src), None, [], []
    for t in range(tgt.size(1)):
        logits, weights, cache = model.decode(memory, tgt[:, t : t + 1], cache)
        steps.append(logits)
        maps.append(weights.get("cross"))
    torch.testing.assert_close(torch.cat(steps, 1), full.logits, atol=1e-5, rtol=1e-5)
    if "cross" in full.attentions:
        assert maps[-1].shape == (2, 1, 1, 1, 4)
        assert torch.all(maps[-1][1, ..., 2:] == 0)  # the padded source slots
        torch.testing.assert_close(torch.cat(maps, 3), full.attentions["cross"], atol=1e-6, rtol=1e-5)


def test_the_draws_kept_for_an_unused_additive_scorer_are_its_parameters():
    """`attention_for` draws one number per weight of an additive scorer, in the order its
    `__init__` draws them, whichever attention it builds."""
    scorer = AdditiveAttention(32, 24, 16)
    assert AdditiveAttention.parameter_shapes(32, 24, 16) == [tuple(p.shape) for p in scorer.parameters()]


def as_it_was_built(c):
    """Seq2Seq's attention as it was once built: an additive scorer drawn for every model, kept by
    the one that asks for it."""
    return {None: None, "additive": AdditiveAttention(c.d_hidden, c.d_hidden, c.d_attn),
            "dot": DotAttention()}[c.attention]


@pytest.mark.parametrize("name", RECURRENT)
@pytest.mark.parametrize("seed", [0, 3])
def test_building_only_the_attention_asked_for_keeps_the_seeded_initialization(name, seed, monkeypatch):
    """Every recurrent model, at a size other than the shipped ones (which
    test_shipped_checkpoints pins), starts from the same weights, with the same names, as when an
    additive scorer was built for every model."""
    config = tiny_config(name, 40)
    now = initialized(config, seed)
    monkeypatch.setattr(seq2seq, "attention_for", as_it_was_built)
    before = initialized(config, seed)
    assert now.state_dict().keys() == before.state_dict().keys()
    assert checkpoint.weights_digest(now) == checkpoint.weights_digest(before)
    assert (now.attention is None) == (config.attention is None)
    assert not any(name.startswith("attention.") for name in now.state_dict()) or config.attention == "additive"
