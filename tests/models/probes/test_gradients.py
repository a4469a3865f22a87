"""Chapter 3's probe against its definition: the Frobenius norm of d h_T / d x_t, computed by
autograd's full Jacobian."""

from __future__ import annotations

import copy

import pytest
import torch

from models.architectures import build
from models.config import Seq2SeqConfig
from models.probes.gradients import DIRECTIONS, jacobian_norms, most_varying_units


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


def test_gradients_leave_no_trace_on_the_model():
    torch.manual_seed(4)
    model = build(Seq2SeqConfig(vocab_size=50, cell="lstm", d_embed=8, d_hidden=16)).eval()
    model.requires_grad_(False)  # as the server loads it
    before = {k: v.clone() for k, v in model.state_dict().items()}
    with torch.inference_mode():  # as if called next to an inference request
        jacobian_norms(model, [5, 6, 7])
        assert torch.is_inference_mode_enabled()  # the grad-enabling context is undone
    assert all(p.grad is None and not p.requires_grad for p in model.parameters())
    assert all(torch.equal(before[k], v) for k, v in model.state_dict().items())


def test_the_units_shown_are_those_whose_gates_vary_most():
    gates = torch.full((5, 3, 6), 0.5)  # (T, 3, H)
    gates[:, 1, 4] = torch.tensor([0.0, 1.0, 0.0, 1.0, 0.0])  # unit 4's forget gate swings most
    gates[:, 0, 1] = torch.tensor([0.2, 0.8, 0.2, 0.8, 0.2])  # then unit 1's input gate
    assert most_varying_units(gates, 2).tolist() == [1, 4]
    assert most_varying_units(gates, 99).tolist() == list(range(6))
