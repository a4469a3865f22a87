"""POST /api/gradients as a function: how much the final encoder state still depends on each
input, against distance from the end (chapter 3), and the LSTM's gates per token.

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
import threading

import torch

from app.services.decoding import InvalidOptionError
from app.services.registry import LoadedModel, ModelRegistry, UnknownModelError
from app.services.rounding import round_sig
from app.services.text import source_of
from models.lstm import LSTMCell
from models.seq2seq import Seq2Seq

MAX_LENGTH = 200  # longest repeated input
DIRECTIONS = 32  # K, random directions of the norm estimate
SEED = 0  # the same directions for every request, so answers repeat exactly
GATE_UNITS = 48  # units shown in the gate heatmaps
DEFAULT_MODELS = ("rnn", "lstm")
GATES = ("input", "forget", "output")
DEFINITION = (
    "norm[i] = Frobenius norm of d h_T / d x_(T-1-i): the Jacobian of the final encoder hidden state "
    f"h_T with respect to the input embedding distance[i] positions before the last token; estimated "
    f"with K = {DIRECTIONS} (or H if smaller) fixed-seed random orthonormal directions Q (H x K) as "
    "sqrt(H/K) * ||Q^T J||_F (exact when K = H), in one batched backward pass, dropout off."
)


def gradients(
    registry: ModelRegistry, text: str, length: int | None = None, names: tuple[str, ...] = (),
    cancel: threading.Event | None = None,
) -> dict:
    """Curves for `names` (default: rnn and lstm) on the sentence's pieces repeated to `length`.
    `cancel` set before the model thread gets to it (the client hung up): nothing is computed."""
    source = source_of(registry.tokenizer, text, registry.max_chars)
    ids = repeat_to(source.ids, length or min(len(source.ids), MAX_LENGTH))
    entries = recurrent_models(registry, names)
    key = ("gradients", source.text, len(ids), tuple(e.name for e in entries))

    def compute() -> dict:
        curves, gates = [], None
        for entry in entries:
            norms, lstm_gates = jacobian_norms(entry.model, ids)
            curves.append({"model": entry.name, "distance": list(range(len(ids))), "norm": round_sig(norms)})
            if gates is None and lstm_gates is not None:
                gates = {"model": entry.name, **gate_summary(lstm_gates)}
        return {"tokens": registry.tokenizer.pieces(ids), "definition": DEFINITION,
                "directions": DIRECTIONS, "curves": curves, "gates": gates}

    return registry.result(key, compute, cancel)


def repeat_to(ids: list[int], length: int) -> list[int]:
    """The sentence's pieces repeated (and cut) to exactly `length`."""
    if not 1 <= length <= MAX_LENGTH:
        raise InvalidOptionError("length", f"must be 1 to {MAX_LENGTH}, got {length}")
    return (ids * math.ceil(length / len(ids)))[:length]


def recurrent_models(registry: ModelRegistry, names: tuple[str, ...]) -> list[LoadedModel]:
    """The requested recurrent models; by default whichever of rnn and lstm are loaded."""
    if not names:
        entries = [registry.models[n] for n in DEFAULT_MODELS if n in registry.models]
        if not entries:
            loaded = ", ".join(registry.names) or "none"
            raise UnknownModelError(f"neither rnn nor lstm is loaded; loaded: {loaded}")
        return entries
    entries = [registry.get(n) for n in names]
    for entry in entries:
        if not isinstance(entry.model, Seq2Seq):
            raise InvalidOptionError("models", f"{entry.name!r} has no recurrent encoder")
    return entries


def directions(H: int, K: int, device) -> torch.Tensor:
    """(H, K) orthonormal columns, the same for every call (fixed seed, drawn on the CPU)."""
    generator = torch.Generator().manual_seed(SEED)
    Q, _ = torch.linalg.qr(torch.randn(H, K, generator=generator, dtype=torch.float64))
    return Q.float().to(device)


def jacobian_norms(model: Seq2Seq, ids: list[int]) -> tuple[torch.Tensor, torch.Tensor | None]:
    """norm per distance from the end (T,), and the LSTM's gates (T, 3, H) (None for the RNN).

    Parameters never get a .grad (autograd.grad with inputs=xs only), and nothing outlives the
    call, so requests share no state."""
    device = next(model.parameters()).device
    H = model.config.d_hidden
    K = min(DIRECTIONS, H)
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


def gate_summary(gates: torch.Tensor) -> dict:
    """gates (T, 3, H) -> the GATE_UNITS units whose gates vary most over the tokens (token x
    unit per gate) and each gate's mean over all units per token."""
    T, _, H = gates.shape
    spread = gates.var(dim=0, unbiased=False).sum(dim=0)  # (H,)
    units = torch.argsort(spread, descending=True, stable=True)[: min(GATE_UNITS, H)].sort().values
    summary = {"units": units.tolist()}
    for g, name in enumerate(GATES):
        summary[name] = round_sig(gates[:, g, units])  # (T, units)
    summary["mean"] = {name: round_sig(gates[:, g].mean(dim=-1)) for g, name in enumerate(GATES)}
    return summary
