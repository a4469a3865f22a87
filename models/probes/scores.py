"""The attention chapter: attention derived, one output position at a time. The decoder state s (the query)
scores every encoder state h_j, a softmax turns the scores into weights, the weights blend the
states into the context:

    e_j = score(s, h_j)      alpha = softmax(e)      c = sum_j alpha_j h_j

score is `v^T tanh(W s + U h_j)` (additive, Bahdanau et al. 2014) or `s . h_j` (dot product).
The probe re-runs the model's own attention module on the decoder state of the chosen step; that
state is rebuilt the way greedy search built it (the decoder fed [BOS] and the chosen pieces one
at a time), so the weights are the ones the translation was made with.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from models.attention import masked_softmax
from models.tokenizer import BOS_ID


@dataclass
class Scored:
    """What the attention computed at one output position, on the CPU."""

    scores: torch.Tensor  # (S,) e_j, before the softmax
    weights: torch.Tensor  # (S,) alpha_j, the model's own softmax of the scores
    context: torch.Tensor  # (H,) the model's own blend sum_j alpha_j h_j
    states: torch.Tensor  # (S, H) the encoder states h_j (the keys and the values)
    formula: str  # the score, as written in the model's attention class


def score_step(model, src_ids: list[int], target_ids: list[int], row: int) -> Scored:
    """The attention of recurrent `model` (eval mode) when it produced output piece `row`,
    having read `src_ids` and produced `target_ids` (row < len(target_ids) + 1: the last row is
    the step that produced end-of-sentence)."""
    attention = model.attention
    if attention is None:
        raise ValueError("the model has no attention")
    if not 0 <= row <= len(target_ids):
        raise ValueError(f"row must be 0 to {len(target_ids)}, got {row}")
    device = next(model.parameters()).device
    read = [BOS_ID, *target_ids[:row]]  # what the decoder had read when it produced piece `row`
    with torch.inference_mode():
        memory = model.encode(torch.tensor([src_ids], device=device))
        cache = None
        for token in read:  # one at a time, as greedy search fed it
            s, cache = model.decoder_states(memory, torch.tensor([[token]], device=device), cache)
        context, weights = attention(s, memory.keys, memory.mask, memory.projected)  # (1,1,H), (1,1,S)
        scores = attention.score(s, memory.keys)  # (1, 1, S): the module's own score, again
    return Scored(scores=scores[0, 0].cpu(), weights=weights[0, 0].cpu(), context=context[0, 0].cpu(),
                  states=memory.keys[0].cpu(), formula=attention.formula)


@dataclass
class Spread:
    """A softmax of scores and how spread out it is."""

    weights: torch.Tensor  # (S,)
    entropy: float  # -sum_j p_j ln p_j, in nats (0: one-hot; ln S: uniform)
    max_weight: float


def spread(weights: torch.Tensor) -> Spread:
    p = weights.double()
    return Spread(weights=weights, entropy=float(-torch.special.xlogy(p, p).sum()), max_weight=float(p.max()))


def reweight(scores: torch.Tensor, temperature: float) -> Spread:
    """softmax(e / T), through the same softmax the attention uses: T = 1 gives the model's own
    weights bit for bit, T -> 0 the argmax (a spotlight), T -> infinity the uniform (a fog)."""
    if not temperature > 0:
        raise ValueError(f"temperature must be > 0, got {temperature}")
    return spread(masked_softmax(scores / temperature, None))
