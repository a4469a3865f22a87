"""The gradients chapter: how much the final encoder state still depends on each input, by distance from the
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
from collections.abc import Callable
from dataclasses import dataclass

import torch

from models.lstm import LSTMCell
from models.outputs import NonFiniteError

DIRECTIONS = 32  # K, random directions of the norm estimate
SEED = 0  # the same directions for every call, so answers repeat exactly
ITERATIONS = 40  # power iterations for the top singular value of each step Jacobian


def directions(H: int, K: int, device) -> torch.Tensor:
    """(H, K) orthonormal columns, the same for every call (fixed seed, drawn on the CPU)."""
    generator = torch.Generator().manual_seed(SEED)
    Q, _ = torch.linalg.qr(torch.randn(H, K, generator=generator, dtype=torch.float64))
    return Q.float().to(device)


@dataclass
class GradientReach:
    """What one backward pass from h_T measures, each (T,) by distance from the end (index 0 is
    the last token). Frobenius norms, float64."""

    inputs: torch.Tensor  # ||d h_T / d x_t||: how much each input embedding can still move h_T
    states: torch.Tensor  # ||d h_T / d s_t||, s_t the recurrent state after token t ((h_t, c_t) for an LSTM)
    gates: torch.Tensor | None  # (T, 3, H) input, forget, output gates per token (in reading order); None: RNN

    @property
    def shrink(self) -> torch.Tensor:
        """(T-1,) how much the gradient shrinks crossing each step backwards, measured:
        ||d h_T / d s_(t-1)|| / ||d h_T / d s_t||, by distance of s_t from the end. Their running
        product is `states` divided by its value at the last token, exactly (it telescopes)."""
        return self.states[1:] / self.states[:-1]


def jacobian_norms(model, ids: list[int], K: int = DIRECTIONS) -> GradientReach:
    """The gradient of the final hidden state h_T of `model`'s recurrent encoder, reading `ids`,
    with respect to every input embedding and every recurrent state (see GradientReach). `model`
    has an `embed` and an `encoder.cell` (the translation models and models.long_lag's alike).

    Parameters never get a .grad (autograd.grad with inputs=xs only), and nothing outlives the
    call, so concurrent calls share no state."""
    device = next(model.parameters()).device
    H = model.encoder.cell.d_hidden
    K = min(K, H)
    embedded = model.embed(torch.tensor(ids, device=device)).detach()  # (T, E); eval mode: no dropout
    exponents = [0] * len(ids)  # filled during the backward pass by Rescale
    squares = [0.0] * len(ids)  # ||incoming state gradient||^2 at each Rescale, before rescaling
    with torch.inference_mode(False), torch.enable_grad():
        xs = [x.expand(K, -1).clone().requires_grad_() for x in embedded.clone()]  # T leaves (K, E)
        final, gates = unroll(model.encoder.cell, xs, exponents, squares)  # (K, H): h_T
        Q = directions(H, K, device)
        grads = torch.autograd.grad(final, xs, grad_outputs=Q.T.contiguous())  # T x (K, E): q_k^T J_t, scaled
    # A gradient at step t went through the rescales at steps t..T-2: undo them, in float64.
    scale = torch.tensor(exponents, dtype=torch.float64).flip(0).cumsum(0).flip(0)  # (T,)
    inputs = torch.stack([g.double().pow(2).sum() for g in grads]).cpu() * (H / K)  # ||J_t||_F^2, scaled
    later = torch.cat([scale[1:], scale.new_zeros(1)])  # the state after t is rescaled from t+1 on
    states = torch.tensor(squares, dtype=torch.float64) * (H / K)
    states[-1] = H  # d h_T / d (h_T, c_T) = [I 0]: its Frobenius norm is sqrt(H), exactly
    return GradientReach(
        inputs=torch.ldexp(inputs.sqrt(), -scale).flip(0),
        states=torch.ldexp(states.sqrt(), -later).flip(0),
        gates=None if gates is None else gates[0].detach(),
    )


class Rescale(torch.autograd.Function):
    """Identity on the way forward. On the way back it scales the recurrent state's gradient by a
    power of two that brings its largest entry near 1, and records the exponent (and the squared
    norm it arrived with): a vanilla RNN's gradient shrinks geometrically, and in float32 it would
    reach the denormal range (where CPU arithmetic is slow) and then zero (invisible on a
    log plot)."""

    @staticmethod
    def forward(ctx, exponents: list, squares: list, step: int, *state):
        ctx.exponents, ctx.squares, ctx.step = exponents, squares, step
        return tuple(s.view_as(s) for s in state)

    @staticmethod
    def backward(ctx, *grads):
        present = [g for g in grads if g is not None]
        biggest = max(float(g.abs().max()) for g in present)
        if not math.isfinite(biggest):
            raise NonFiniteError(f"the recurrent state's gradient is {biggest} at step {ctx.step}")
        exponent = 0 if biggest == 0 else max(-100, min(100, -math.floor(math.log2(biggest))))
        ctx.exponents[ctx.step] = exponent
        ctx.squares[ctx.step] = sum(float(g.double().pow(2).sum()) for g in present)
        return None, None, None, *(None if g is None else g * 2.0**exponent for g in grads)


def unroll(cell, xs: list[torch.Tensor], exponents: list[int],
           squares: list[float]) -> tuple[torch.Tensor, torch.Tensor | None]:
    """The encoder's recurrence, step by step through its own cell, with one input leaf per step
    and a Rescale after every state but the last (the state after token t records exponents[t]
    and squares[t]).

    Same cell, same weights, same order as `model.encoder(x)` (tests check the gradients against
    it); unrolled here because differentiating with respect to slices x[:, t] of one tensor
    makes autograd add T full-size gradients, quadratic in the length (seconds at 200 tokens)."""
    lstm = isinstance(cell, LSTMCell)
    zeros = xs[0].new_zeros(xs[0].size(0), cell.d_hidden)  # (K, H)
    state, gates = ((zeros, zeros) if lstm else (zeros,)), []
    for t, x in enumerate(xs):
        if t:
            state = Rescale.apply(exponents, squares, t - 1, *state)
        if lstm:
            step = cell(x, state)
            state = (step.h, step.c)
            gates.append(step.gates)
        else:
            state = (cell(x, state[0]),)
    return state[0], torch.stack(gates, dim=1) if lstm else None  # h_T (K, H); gates (K, T, 3, H)


@dataclass
class StepFactors:
    """The textbook's argument, measured one step at a time: backpropagating across token t
    multiplies the gradient by the step Jacobian d s_t / d s_(t-1), so it shrinks by at most that
    Jacobian's top singular value. Each (T,) by distance of s_t from the end; the entry at the
    first token (whose previous state is the zero start) is kept for completeness."""

    state: torch.Tensor  # sigma_max(d s_t / d s_(t-1)): the whole state ((h, c) for an LSTM)
    hidden: torch.Tensor  # sigma_max(d h_t / d h_(t-1)), c_(t-1) held fixed: the LSTM's squashing path
    forget: torch.Tensor | None  # mean forget gate: the cell path's factor, d c_t / d c_(t-1) = diag(f_t)


def step_factors(model, ids: list[int], iterations: int = ITERATIONS,
                 between: Callable[[], None] | None = None) -> StepFactors:
    """Top singular values of every step Jacobian of `model`'s encoder reading `ids`, all steps at
    once by power iteration on J^T J (forward- then reverse-mode products, no Jacobian stored).
    `between`, if given, is called after each iteration (a server runs urgent work there); it
    must leave this thread's torch state as it found it."""
    cell = model.encoder.cell
    device = next(model.parameters()).device
    with torch.inference_mode(False), torch.no_grad():
        x = model.embed(torch.tensor([ids], device=device)).clone()  # (1, T, E)
        run = model.encoder(x)
        before = _shift(run.hidden[0])  # (T, H): h_(t-1), zeros before the first token
        if not isinstance(cell, LSTMCell):
            def rnn_step(h):
                return cell(x[0], h)
            sigma = top_singular_values(rnn_step, (before,), iterations, between)
            return StepFactors(state=sigma.flip(0), hidden=sigma.flip(0), forget=None)
        wx, c_before = cell.W(x[0]), _shift(run.cell[0])

        def lstm_step(h, c):
            out = cell.step(wx, h, c)
            return out.h, out.c

        def hidden_step(h):
            return cell.step(wx, h, c_before).h

        state = top_singular_values(lstm_step, (before, c_before), iterations, between)
        hidden = top_singular_values(hidden_step, (before,), iterations, between)
        forget = run.gates[0, :, 1].double().mean(dim=-1).cpu()
    return StepFactors(state=state.flip(0), hidden=hidden.flip(0), forget=forget.flip(0))


def _shift(states: torch.Tensor) -> torch.Tensor:
    """(T, H) states after each token -> the state before each token (zeros before the first)."""
    return torch.cat([states.new_zeros(1, states.size(1)), states[:-1]])


def load_forward_mode(models) -> None:
    """Run the per-step measurement once on two pieces with each of `models` (those with a
    recurrent encoder), so that torch's lazy first-use set-up of forward-mode differentiation
    happens now: it compiles jvp rules with TorchScript and imports torch._dynamo, both of which
    parse Python source, and CPython 3.11 can fail ("AST constructor recursion depth mismatch")
    when another thread parses source at the same moment. A server calls this at start-up,
    before it answers, so no request ever runs that set-up. The set-up is once per process: one
    model of each kind of cell covers every operation the measurement differentiates."""
    kinds = {}
    for model in models:
        kinds.setdefault(type(model.encoder.cell), model)
    for model in kinds.values():
        step_factors(model, [1, 2], iterations=1)


def top_singular_values(step, primals: tuple[torch.Tensor, ...], iterations: int,
                        between: Callable[[], None] | None = None) -> torch.Tensor:
    """sigma_max of the Jacobian of `step` at each of the T rows of `primals` (each (T, H)); rows
    are independent steps. Power iteration from a fixed start: (T,) float64.

    The reverse-mode pass is set up once, its pullback reused by every iteration (the forward it
    saves is the same each time: the same numbers, a forward fewer per iteration). The iterations
    cannot stop early: at 40 most rows still move in their fourth significant digit."""
    generator = torch.Generator().manual_seed(SEED)
    v = [torch.randn(p.shape, generator=generator).to(p) for p in primals]
    sigma = None
    _, pullback = torch.func.vjp(step, *primals)
    for _ in range(iterations):
        v = _unit(v)
        _, Jv = torch.func.jvp(step, primals, tuple(v))
        Jv = Jv if isinstance(Jv, tuple) else (Jv,)
        sigma = _row_norm(Jv)
        v = list(pullback(Jv if len(Jv) > 1 else Jv[0]))
        if between is not None:
            between()
    return sigma.double().cpu()


def _row_norm(parts) -> torch.Tensor:
    return torch.stack([p.pow(2).sum(dim=-1) for p in parts]).sum(dim=0).sqrt()  # (T,)


def _unit(parts: list[torch.Tensor]) -> list[torch.Tensor]:
    norm = _row_norm(parts).clamp_min(1e-300).unsqueeze(-1)
    return [p / norm for p in parts]


def most_varying_units(gates: torch.Tensor, n: int) -> torch.Tensor:
    """gates (T, 3, H) -> the n units (ascending ids) whose three gates vary most over the tokens:
    a readable subset of a wide layer."""
    spread = gates.var(dim=0, unbiased=False).sum(dim=0)  # (H,)
    return torch.argsort(spread, descending=True, stable=True)[: min(n, gates.size(-1))].sort().values
