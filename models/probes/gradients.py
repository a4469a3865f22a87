"""Chapter 3: how much the final encoder state still depends on each input, by distance from the
end, and the LSTM's gates per token.

norm[i] = ||d h_T / d x_{T-1-i}||_F, the Frobenius norm of the Jacobian of the final hidden
state h_T (H) with respect to the input embedding (E) i positions before the last token.
The exact norm needs H backward passes; K random orthonormal directions Q (H x K, fixed seed)
estimate it from one: ||J||_F^2 ~= (H / K) ||Q^T J||_F^2, unbiased over the choice of Q and
exact when K = H. The input is replicated K times along the batch so that the K rows of Q^T
travel back together as `grad_outputs`. The backward pass is rescaled step by step (Rescale),
so a vanishing gradient keeps its digits far below float32's range (1e-60 is still 1e-60).
"""

from __future__ import annotations

import math

import torch

from models.lstm import LSTMCell
from models.seq2seq import Seq2Seq

DIRECTIONS = 32  # K, random directions of the norm estimate
SEED = 0  # the same directions for every call, so answers repeat exactly


def directions(H: int, K: int, device) -> torch.Tensor:
    """(H, K) orthonormal columns, the same for every call (fixed seed, drawn on the CPU)."""
    generator = torch.Generator().manual_seed(SEED)
    Q, _ = torch.linalg.qr(torch.randn(H, K, generator=generator, dtype=torch.float64))
    return Q.float().to(device)


def jacobian_norms(
    model: Seq2Seq, ids: list[int], K: int = DIRECTIONS,
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """norm per distance from the end (T,) in float64, and the LSTM's gates (T, 3, H) (None for
    the RNN), on the encoder of `model` reading `ids`.

    Parameters never get a .grad (autograd.grad with inputs=xs only), and nothing outlives the
    call, so concurrent calls share no state."""
    device = next(model.parameters()).device
    H = model.config.d_hidden
    K = min(K, H)
    embedded = model.embed(torch.tensor(ids, device=device)).detach()  # (T, E); eval mode: no dropout
    exponents = [0] * len(ids)  # filled during the backward pass by Rescale
    with torch.inference_mode(False), torch.enable_grad():
        xs = [x.expand(K, -1).clone().requires_grad_() for x in embedded.clone()]  # T leaves (K, E)
        final, gates = unroll(model.encoder.cell, xs, exponents)  # (K, H): h_T
        Q = directions(H, K, device)
        grads = torch.autograd.grad(final, xs, grad_outputs=Q.T.contiguous())  # T x (K, E): q_k^T J_t, scaled
    # The gradient of x_t went through the rescales at steps t..T-2: undo them, in float64.
    scale = torch.tensor(exponents, dtype=torch.float64).flip(0).cumsum(0).flip(0)  # (T,)
    squared = torch.stack([g.double().pow(2).sum() for g in grads]).cpu() * (H / K)  # ||J_t||_F^2, scaled
    return torch.ldexp(squared.sqrt(), -scale).flip(0), None if gates is None else gates[0].detach()


class Rescale(torch.autograd.Function):
    """Identity on the way forward. On the way back it scales the recurrent state's gradient by a
    power of two that brings its largest entry near 1, and records the exponent: a vanilla RNN's
    gradient shrinks geometrically, and in float32 it would reach the denormal range (CPU
    arithmetic there is ~10x slower) and then zero (invisible on a log plot)."""

    @staticmethod
    def forward(ctx, exponents: list, step: int, *state):
        ctx.exponents, ctx.step = exponents, step
        return tuple(s.view_as(s) for s in state)

    @staticmethod
    def backward(ctx, *grads):
        biggest = max(float(g.abs().max()) for g in grads if g is not None)
        exponent = 0 if biggest == 0 else max(-100, min(100, -math.floor(math.log2(biggest))))
        ctx.exponents[ctx.step] = exponent
        return None, None, *(None if g is None else g * 2.0**exponent for g in grads)


def unroll(cell, xs: list[torch.Tensor], exponents: list[int]) -> tuple[torch.Tensor, torch.Tensor | None]:
    """The encoder's recurrence, step by step through its own cell, with one input leaf per step
    and a Rescale between steps (t < T-1 records exponents[t]).

    Same cell, same weights, same order as `model.encoder(x)` (tests check the gradients against
    it); unrolled here because differentiating with respect to slices x[:, t] of one tensor
    makes autograd add T full-size gradients, quadratic in the length (seconds at 200 tokens)."""
    lstm = isinstance(cell, LSTMCell)
    zeros = xs[0].new_zeros(xs[0].size(0), cell.d_hidden)  # (K, H)
    state, gates = ((zeros, zeros) if lstm else (zeros,)), []
    for t, x in enumerate(xs):
        if t:
            state = Rescale.apply(exponents, t - 1, *state)
        if lstm:
            step = cell(x, state)
            state = (step.h, step.c)
            gates.append(step.gates)
        else:
            state = (cell(x, state[0]),)
    return state[0], torch.stack(gates, dim=1) if lstm else None  # h_T (K, H); gates (K, T, 3, H)


def most_varying_units(gates: torch.Tensor, n: int) -> torch.Tensor:
    """gates (T, 3, H) -> the n units (ascending ids) whose three gates vary most over the tokens:
    a readable subset of a wide layer."""
    spread = gates.var(dim=0, unbiased=False).sum(dim=0)  # (H,)
    return torch.argsort(spread, descending=True, stable=True)[: min(n, gates.size(-1))].sort().values
