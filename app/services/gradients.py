"""POST /api/gradients as a function: how much the final encoder state still depends on each
input, against distance from the end (chapter 3), and the LSTM's gates per token.

norm[i] = ||d h_T / d x_{T-1-i}||_F, the Frobenius norm of the Jacobian of the final hidden
state h_T (H) with respect to the input embedding (E) i positions before the last token.
The exact norm needs H backward passes; K random orthonormal directions Q (H x K, fixed seed)
estimate it from one: ||J||_F^2 ~= (H / K) ||Q^T J||_F^2, unbiased over the choice of Q and
exact when K = H. The input is replicated K times along the batch so that the K rows of Q^T
travel back together as `grad_outputs`.
"""

from __future__ import annotations

import math

import torch

from app.services.decoding import InvalidOptionError
from app.services.registry import LoadedModel, ModelRegistry, UnknownModelError
from app.services.rounding import round_sig
from app.services.text import source_of
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
    f"with K = {DIRECTIONS} fixed-seed random orthonormal directions Q (H x K) as sqrt(H/K) * ||Q^T J||_F "
    "(exact when K = H), in one batched backward pass, dropout off."
)


def gradients(
    registry: ModelRegistry, text: str, length: int | None = None, names: tuple[str, ...] = ()
) -> dict:
    """Curves for `names` (default: rnn and lstm) on the sentence's pieces repeated to `length`."""
    source = source_of(registry.tokenizer, text, registry.max_chars)
    ids = repeat_to(source.ids, length or min(len(source.ids), MAX_LENGTH))
    entries = recurrent_models(registry, names)
    key = ("gradients", source.text, len(ids), tuple(e.name for e in entries))

    def compute() -> dict:
        curves, gates = [], None
        for entry in entries:
            norms, run = jacobian_norms(entry.model, ids)
            curves.append({"model": entry.name, "distance": list(range(len(ids))), "norm": round_sig(norms)})
            if gates is None and run.get("gates") is not None:
                gates = {"model": entry.name, **gate_summary(run["gates"])}
        return {"tokens": registry.tokenizer.pieces(ids), "definition": DEFINITION,
                "directions": DIRECTIONS, "curves": curves, "gates": gates}

    return registry.cache.get_or_compute(key, compute)


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


def jacobian_norms(model: Seq2Seq, ids: list[int]) -> tuple[torch.Tensor, dict]:
    """norm per distance from the end (T,), and the encoder run of row 0 (gates for an LSTM).

    Parameters never get a .grad (autograd.grad with inputs=x only), and nothing outlives the
    call, so requests share no state."""
    device = next(model.parameters()).device
    H = model.config.d_hidden
    K = min(DIRECTIONS, H)
    src = torch.tensor([ids], device=device)  # (1, T)
    with torch.inference_mode(False), torch.enable_grad():
        x = model.embed(src).detach().expand(K, -1, -1).clone().requires_grad_()  # (K, T, E)
        encoding = model.encoder(x)  # eval mode: no dropout
        final = encoding.final[0] if isinstance(encoding.final, tuple) else encoding.final  # (K, H): h_T
        Q = directions(H, K, device)
        (grad,) = torch.autograd.grad(final, x, grad_outputs=Q.T.contiguous())  # (K, T, E): q_k^T J_t
    squared = grad.pow(2).sum(dim=(0, 2)) * (H / K)  # (T,): ||J_t||_F^2 estimates
    gates = getattr(encoding, "gates", None)
    return squared.sqrt().flip(0), {"gates": None if gates is None else gates[0].detach()}


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
