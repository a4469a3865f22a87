"""The scaling chapter: why the Transformer divides its scores by sqrt(d_k).

The dot product of two vectors with i.i.d. N(0, 1) entries has variance d_k, so its spread grows
like sqrt(d_k). Fed unscaled to a softmax, wide vectors give scores far apart: the softmax puts
(almost) all the weight on one key, and its Jacobian diag(p) - p p^T, the factor every gradient
through it is multiplied by, goes to zero. Dividing by sqrt(d_k) keeps the spread near 1 at every
width.

Two measurements: `saturation` on sampled vectors (the claim, under a stated distribution), and
`model_scores` on the Transformer's own queries and keys for a sentence (where the shipped model
sits), read off `Transformer.attention_calls` through each layer's own W_q and W_k.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from models.attention import masked_softmax
from models.tokenizer import BOS_ID

DISTRIBUTION = "q and k with i.i.d. N(0, 1) entries (float64)"


@dataclass
class Saturation:
    """Means over `draws` queries, each scored against `keys` keys, at one d_k."""

    d_k: int
    scaled: bool  # scores divided by sqrt(d_k)
    score_std: float  # standard deviation of the scores (all draws and keys)
    max_weight: float  # mean largest softmax weight (1 / keys: uniform; 1: one-hot)
    entropy: float  # mean -sum p ln p, nats (ln keys: uniform; 0: one-hot)
    gradient: float  # mean ||diag(p) - p p^T||_F: the softmax's Jacobian d p / d scores


def softmax_stats(scores: torch.Tensor, mask: torch.Tensor | None = None) -> tuple[torch.Tensor, ...]:
    """Scores (..., n) -> per row: max weight, entropy (nats), Frobenius norm of the Jacobian.
    ||diag(p) - p p^T||_F^2 = sum_i p_i^2 - 2 sum_i p_i^3 + (sum_i p_i^2)^2."""
    p = masked_softmax(scores.double(), mask)
    entropy = -torch.special.xlogy(p, p).sum(-1)
    squares = (p * p).sum(-1)
    jacobian = (squares - 2 * (p**3).sum(-1) + squares**2).clamp_min(0).sqrt()
    return p.max(-1).values, entropy, jacobian


def saturation(d_ks: list[int], keys: int = 16, draws: int = 512, seed: int = 0) -> list[Saturation]:
    """For each d_k, with and without the scale: `draws` queries q and `keys` keys k per query,
    every entry drawn i.i.d. from N(0, 1) by a generator seeded with `seed` (the same draws for
    both variants). Scores q . k_j (or q . k_j / sqrt(d_k))."""
    out = []
    for d_k in d_ks:
        generator = torch.Generator().manual_seed(seed + d_k)
        q = torch.randn(draws, 1, d_k, generator=generator, dtype=torch.float64)
        k = torch.randn(draws, keys, d_k, generator=generator, dtype=torch.float64)
        raw = (q * k).sum(-1)  # (draws, keys)
        for scaled in (False, True):
            scores = raw / math.sqrt(d_k) if scaled else raw
            top, entropy, gradient = softmax_stats(scores)
            out.append(Saturation(d_k, scaled, float(scores.std(correction=0)), float(top.mean()),
                                  float(entropy.mean()), float(gradient.mean())))
    return out


@dataclass
class HeadScores:
    """One head's scores on a sentence, over the (query, key) pairs it may see."""

    kind: str
    layer: int
    head: int
    d_k: int
    raw_std: float  # std of q . k (no scale)
    scaled_std: float  # std of q . k / sqrt(d_k): what the model feeds its softmax
    max_weight: float  # mean largest weight per query row, as the model computes (scaled)
    entropy: float  # mean entropy per row (nats), scaled
    gradient: float  # mean ||softmax Jacobian||_F per row, scaled
    unscaled_max_weight: float  # the same three had the model skipped the scale
    unscaled_entropy: float
    unscaled_gradient: float


def head_queries_keys(call) -> tuple[torch.Tensor, torch.Tensor]:
    """The per-head queries and keys of one `AttentionCall` (batch row 0): (h, T_q, d_k), (h, T_k, d_k),
    computed with the layer's own projections, as MultiHeadAttention computes them."""
    module = call.module
    q = module._split(module.W_q(call.query_in))[0]
    k = module._split(module.W_k(call.key_in))[0]
    return q, k


def visible(call, heads: int) -> torch.Tensor:
    """(h, T_q, T_k) True where the query may see the key (the call's mask, broadcast)."""
    T_q, T_k = call.query_in.size(1), call.key_in.size(1)
    if call.mask is None:
        return torch.ones(heads, T_q, T_k, dtype=torch.bool, device=call.query_in.device)
    mask = call.mask[0] if call.mask.dim() == 3 else call.mask  # (1 or T_q, T_k)
    return mask.expand(heads, T_q, T_k)


def model_scores(model, src_ids: list[int], target_ids: list[int], positional: bool | None = None):
    """Per (kind, layer, head) the spread of the Transformer's scores on `src_ids`, the decoder fed
    [BOS] + `target_ids` (teacher forcing; the translation's own pieces give greedy's numbers).
    Returns (list of HeadScores, calls' weights for checking: kind -> (L, h, T_q, T_k))."""
    device = next(model.parameters()).device
    src = torch.tensor([src_ids], device=device)
    tgt = torch.tensor([[BOS_ID, *target_ids]], device=device)
    out, weights = [], {}
    with torch.inference_mode():
        calls = model.attention_calls(src, tgt, positional=positional)
        for call in calls:
            q, k = head_queries_keys(call)
            d_k = q.size(-1)
            raw = (q @ k.transpose(-2, -1)).double()  # (h, T_q, T_k)
            seen = visible(call, q.size(0))
            scaled_w = masked_softmax((raw / math.sqrt(d_k)).float(), seen)
            weights.setdefault(call.kind, []).append(scaled_w)
            for head in range(q.size(0)):
                r, m = raw[head], seen[head]
                spread = float(r[m].std(correction=0))
                stats, plain = softmax_stats(r / math.sqrt(d_k), m), softmax_stats(r, m)
                out.append(HeadScores(call.kind, call.layer, head, d_k, spread, spread / math.sqrt(d_k),
                                      *(float(s.mean()) for s in stats), *(float(s.mean()) for s in plain)))
    return out, {kind: torch.stack(w) for kind, w in weights.items()}
