"""The services on their own, without HTTP: the pieces the chapters will reuse."""

from __future__ import annotations

import copy
import random

import pytest
import torch

from app.services.attention import attention
from app.services.decoding import DecodeOptions, InvalidOptionError
from app.services.gradients import DIRECTIONS, jacobian_norms, repeat_to
from app.services.registry import load_registry
from app.services.rounding import round_sig
from app.services.text import InvalidTextError, check_text, source_of
from app.services.translate import translate
from models.architectures import build
from models.config import Seq2SeqConfig


@pytest.fixture(scope="module")
def registry(tiny_checkpoints):
    return load_registry(tiny_checkpoints, device="cpu", cache_size=0)


@pytest.mark.parametrize("cell", ["rnn", "lstm"])
def test_gradient_norms_equal_the_exact_jacobian_when_K_equals_H(cell):
    torch.manual_seed(1)
    model = build(Seq2SeqConfig(vocab_size=50, cell=cell, d_embed=8, d_hidden=DIRECTIONS)).eval()
    ids = [5, 9, 4, 7, 11, 6]
    norms, _ = jacobian_norms(model, ids)
    x = model.embed(torch.tensor([ids])).detach()

    def final(x):
        out = model.encoder(x).final
        return out[0] if isinstance(out, tuple) else out

    J = torch.autograd.functional.jacobian(final, x)[0, :, 0]  # (H, T, E)
    exact = J.double().pow(2).sum(dim=(0, 2)).sqrt().flip(0)
    torch.testing.assert_close(norms, exact, rtol=1e-4, atol=1e-6)


def test_gradient_estimate_is_close_when_K_is_below_H():
    torch.manual_seed(2)
    model = build(Seq2SeqConfig(vocab_size=50, cell="lstm", d_embed=8, d_hidden=256)).eval()
    norms, _ = jacobian_norms(model, list(range(4, 16)))
    x = model.embed(torch.tensor([list(range(4, 16))])).detach()
    J = torch.autograd.functional.jacobian(lambda x: model.encoder(x).final[0], x)[0, :, 0]
    exact = J.double().pow(2).sum(dim=(0, 2)).sqrt().flip(0)
    assert ((norms / exact - 1).abs() < 0.5).all()  # K = 32 of H = 256: a rough but honest estimate


def test_vanishing_gradients_stay_visible_far_below_float32():
    """A contractive RNN: by 150 steps back the gradient is far below float32's smallest
    number, yet the rescaled float32 pass matches a float64 computation of the same thing."""
    torch.manual_seed(3)
    model = build(Seq2SeqConfig(vocab_size=50, cell="rnn", d_embed=8, d_hidden=DIRECTIONS)).eval()
    with torch.no_grad():
        model.encoder.cell.W.weight.mul_(0.3)
    ids = [4 + i % 40 for i in range(150)]
    norms, _ = jacobian_norms(model, ids)
    double = copy.deepcopy(model).double()
    x = double.embed(torch.tensor([ids])).detach()
    J = torch.autograd.functional.jacobian(lambda x: double.encoder(x).final, x)[0, :, 0]  # (H, T, E)
    exact = J.pow(2).sum(dim=(0, 2)).sqrt().flip(0)
    assert exact[-1] < 1e-50  # far beyond float32
    torch.testing.assert_close(norms, exact, rtol=1e-3, atol=0)


def test_gradients_leave_no_trace_on_the_model(registry):
    model = registry.models["lstm"].model
    before = {k: v.clone() for k, v in model.state_dict().items()}
    with torch.inference_mode():  # as if called next to an inference request
        jacobian_norms(model, [5, 6, 7])
        assert torch.is_inference_mode_enabled()  # the grad-enabling context is undone
    assert all(p.grad is None and not p.requires_grad for p in model.parameters())
    assert all(torch.equal(before[k], v) for k, v in model.state_dict().items())


def test_repeat_to():
    assert repeat_to([1, 2, 3], 7) == [1, 2, 3, 1, 2, 3, 1]
    assert repeat_to([1, 2, 3], 2) == [1, 2]
    with pytest.raises(InvalidOptionError):
        repeat_to([1], 201)


def test_round_sig_keeps_small_numbers_and_short_decimals():
    assert round_sig(torch.tensor([0.91149997, 1.234567e-12, 0.0, 123.456])) == [0.9115, 1.235e-12, 0.0, 123.5]
    assert round_sig(0.33333) == 0.3333


@pytest.mark.parametrize("text", ["", "   ", "\u0000\u0007", "x" * 501])
def test_check_text_rejects(text):
    with pytest.raises(InvalidTextError):
        check_text(text, 500)


def test_check_text_normalises():
    assert check_text("  \u00abBonjour\u00a0!\u00bb ", 500) == '"Bonjour !"'


def test_chapter_experiments_are_one_call_each(registry):
    """Chapters 8-10 as the services will serve them: PE off, a head off, top-k, beam."""
    text = "Le chat dort sur la table."
    no_pe = attention(registry, "transformer", text, DecodeOptions(positional=False), kinds=("encoder",))
    assert {m["kind"] for m in no_pe["maps"]} == {"encoder"}
    head_off = translate(registry, "transformer", text, DecodeOptions(heads_off=(("cross", 0, 1),)))
    assert head_off["model"] == "transformer"
    steps = translate(registry, "transformer", text, DecodeOptions(top_k=5))["steps"]
    assert all(len(s["top"]) == 5 for s in steps)
    beam = translate(registry, "lstm-dot", text, DecodeOptions(beam_size=4))
    assert 1 <= len(beam["candidates"]) <= 4
    with pytest.raises(InvalidOptionError):
        translate(registry, "lstm-dot", text, DecodeOptions(heads_off=(("cross", 0, 0),)))


def test_positional_switch_permutes_encoder_attention(registry):
    """Chapter 8's claim on the tiny model: without positions, shuffling the words only permutes
    the encoder self-attention."""
    words = ["▁Le", "▁chat", "▁dort"]
    original = attention(registry, "transformer", "Le chat dort", DecodeOptions(positional=False), ("encoder",))
    shuffled = attention(registry, "transformer", "dort Le chat", DecodeOptions(positional=False), ("encoder",))
    assert original["source_tokens"] == words
    order = [shuffled["source_tokens"].index(w) for w in words]
    a = torch.tensor(original["maps"][0]["weights"])
    b = torch.tensor(shuffled["maps"][0]["weights"])[order][:, order]
    torch.testing.assert_close(a, b, atol=2e-4, rtol=1e-3)


def test_any_unicode_text_is_either_rejected_or_encoded(registry):
    """Random strings from the whole code space (surrogates, controls, unassigned included):
    each is a clear InvalidTextError or a non-empty list of pieces, never another exception."""
    rng = random.Random(0)
    for _ in range(300):
        text = "".join(chr(rng.randrange(0x110000)) for _ in range(rng.randrange(1, 40)))
        try:
            source = source_of(registry.tokenizer, text)
        except InvalidTextError:
            continue
        assert source.ids and len(source.pieces) == len(source.ids)
