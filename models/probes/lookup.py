"""The one line, measured: softmax(Q K^T / sqrt(d_k)) V on one head of the Transformer's first
encoder self-attention layer.

Attention as a soft dictionary lookup: each position's query q_i is matched against every key k_j,
the matches (scaled by sqrt(d_k), the scaling chapter) go through a softmax, and the answer is the weighted
mix of the values v_j. Keys and values are separate projections of the same positions, so what a
position is found by can differ from what it hands over. In the encoder the queries, keys and
values all come from the source itself: self-attention.

The probe recomputes the line by hand from the layer's own W_Q, W_K, W_V and compares the mix with
the head's output as the model's forward pass produced it (the input of W_O, read by a hook).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from models.tokenizer import BOS_ID


@dataclass
class Lookup:
    """One head's lookup over a source, on the CPU, float64 where recomputed."""

    head: int
    heads: int  # heads in the layer
    d_model: int
    d_k: int  # width of one head's queries and keys (= its values' here)
    queries: torch.Tensor  # (S, d_k)
    keys: torch.Tensor  # (S, d_k)
    values: torch.Tensor  # (S, d_k)
    scores: torch.Tensor  # (S, S): Q K^T / sqrt(d_k)
    weights: torch.Tensor  # (S, S): softmax of each row
    mix: torch.Tensor  # (S, d_k): weights V
    model_output: torch.Tensor  # (S, d_k): the head's output in the model's own pass
    model_weights: torch.Tensor  # (S, S): the model's own softmax for this head


def lookup(model, src_ids: list[int], head: int) -> Lookup:
    """Head `head` of the first encoder layer of Transformer `model` (eval mode) on `src_ids`."""
    attention = model.encoder_layers[0].self_attn
    if not 0 <= head < attention.n_heads:
        raise ValueError(f"head must be 0 to {attention.n_heads - 1}, got {head}")
    device = next(model.parameters()).device
    seen = {}
    width = slice(head * attention.d_head, (head + 1) * attention.d_head)

    def keep(_module, inputs):  # W_O's input: every head's output side by side
        seen.setdefault("context", inputs[0][0, :, width].detach())

    handle = attention.W_o.register_forward_pre_hook(keep)
    try:
        with torch.inference_mode():
            call = model.attention_calls(torch.tensor([src_ids], device=device),
                                         torch.tensor([[BOS_ID]], device=device))[0]
    finally:
        handle.remove()
    with torch.inference_mode():
        x = call.query_in[0].double()  # (S, d): the layer-normed source, read by all three projections

        def project(linear):
            w = linear.weight.double()[width]  # this head's rows of the projection
            return x @ w.T + linear.bias.double()[width]

        q, k, v = project(attention.W_q), project(attention.W_k), project(attention.W_v)
        scores = q @ k.T / math.sqrt(attention.d_head)
        weights = torch.softmax(scores, dim=-1)
        mix = weights @ v
    return Lookup(head=head, heads=attention.n_heads, d_model=x.size(1), d_k=attention.d_head,
                  queries=q.cpu(), keys=k.cpu(), values=v.cpu(), scores=scores.cpu(), weights=weights.cpu(),
                  mix=mix.cpu(), model_output=seen["context"].double().cpu(),
                  model_weights=call.weights[0, head].double().cpu())
