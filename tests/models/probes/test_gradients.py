"""The gradients chapter's probe against its definition: the Frobenius norm of d h_T / d x_t, computed by
autograd's full Jacobian."""

from __future__ import annotations

import copy

import pytest
import torch
from torch.autograd.functional import jacobian

from models.architectures import build
from models.config import Seq2SeqConfig
from models.probes.gradients import DIRECTIONS, jacobian_norms, most_varying_units, step_factors


@pytest.mark.parametrize("cell", ["rnn", "lstm"])
def test_gradient_norms_equal_the_exact_jacobian_when_K_equals_H(cell):
    torch.manual_seed(1)
    model = build(Seq2SeqConfig(vocab_size=50, cell=cell, d_embed=8, d_hidden=DIRECTIONS)).eval()
    ids = [5, 9, 4, 7, 11, 6]
    norms = jacobian_norms(model, ids).inputs
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
    norms = jacobian_norms(model, list(range(4, 16))).inputs
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
    norms = jacobian_norms(model, ids).inputs
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


def _exact_state_norms(model, ids) -> torch.Tensor:
    """||d h_T / d s_t||_F for every t, by autograd's full Jacobian through an explicit unroll."""
    cell = model.encoder.cell
    x = model.embed(torch.tensor(ids)).detach()
    lstm = hasattr(cell, "U")
    H = cell.d_hidden
    norms = []
    for t in range(len(ids)):
        run = model.encoder(x[None, : t + 1])
        start = torch.cat([run.final[0][0], run.final[1][0]]) if lstm else run.final[0]

        def h_T(s, t=t):
            state = (s[None, :H], s[None, H:]) if lstm else s[None]
            for u in range(t + 1, len(ids)):
                if lstm:
                    out = cell(x[u : u + 1], state)
                    state = (out.h, out.c)
                else:
                    state = cell(x[u : u + 1], state)
            return state[0][0] if lstm else state[0]

        norms.append(torch.autograd.functional.jacobian(h_T, start).double().norm())
    return torch.stack(norms).flip(0)


@pytest.mark.parametrize("cell", ["rnn", "lstm"])
def test_the_state_curve_and_its_per_step_shrink_are_exact(cell):
    """With K = H the state curve is exact; the measured shrink per step multiplies back to it."""
    torch.manual_seed(5)
    model = build(Seq2SeqConfig(vocab_size=50, cell=cell, d_embed=8, d_hidden=DIRECTIONS)).eval()
    ids = [5, 9, 4, 7, 11, 6, 8]
    reach = jacobian_norms(model, ids)
    torch.testing.assert_close(reach.states, _exact_state_norms(model, ids), rtol=1e-4, atol=1e-9)
    running = torch.cat([torch.ones(1, dtype=torch.float64), reach.shrink.cumprod(0)])
    torch.testing.assert_close(running, reach.states / reach.states[0], rtol=1e-12, atol=0)


@pytest.mark.parametrize("cell", ["rnn", "lstm"])
def test_step_factors_are_the_step_jacobians_top_singular_values_and_bound_the_shrink(cell):
    torch.manual_seed(6)
    model = build(Seq2SeqConfig(vocab_size=50, cell=cell, d_embed=8, d_hidden=DIRECTIONS)).eval()
    ids = [5, 9, 4, 7, 11, 6, 8, 12]
    factors = step_factors(model, ids, iterations=300)
    x = model.embed(torch.tensor([ids])).detach()
    run = model.encoder(x)
    exact_state, exact_hidden = [], []
    for t in range(len(ids)):
        h = run.hidden[0, t - 1] if t else torch.zeros(DIRECTIONS)
        if cell == "rnn":
            J = jacobian(lambda h, t=t: model.encoder.cell(x[0, t : t + 1], h[None])[0], h)
            exact_state.append(torch.linalg.matrix_norm(J, 2))
            exact_hidden.append(exact_state[-1])
            continue
        c = run.cell[0, t - 1] if t else torch.zeros(DIRECTIONS)
        wx = model.encoder.cell.W(x[0, t : t + 1])

        def both(s, wx=wx):
            out = model.encoder.cell.step(wx, s[None, :DIRECTIONS], s[None, DIRECTIONS:])
            return torch.cat([out.h[0], out.c[0]])

        exact_state.append(torch.linalg.matrix_norm(jacobian(both, torch.cat([h, c])), 2))
        J_h = jacobian(lambda h, wx=wx, c=c: model.encoder.cell.step(wx, h[None], c[None]).h[0], h)
        exact_hidden.append(torch.linalg.matrix_norm(J_h, 2))
    torch.testing.assert_close(factors.state, torch.stack(exact_state).double().flip(0), rtol=1e-4, atol=1e-6)
    torch.testing.assert_close(factors.hidden, torch.stack(exact_hidden).double().flip(0), rtol=1e-4, atol=1e-6)
    # ||A B||_F <= ||A||_F ||B||_2: crossing step t can shrink the gradient by at most sigma_max
    shrink = jacobian_norms(model, ids).shrink
    assert (shrink <= factors.state[:-1] * (1 + 1e-5)).all()
    if cell == "lstm":
        torch.testing.assert_close(factors.forget, run.gates[0, :, 1].double().mean(-1).flip(0))
    else:
        assert factors.forget is None
