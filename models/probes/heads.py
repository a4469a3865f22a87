"""The heads chapter: many heads, and which of them matter.

A head's attention weights say where it looks, not what it adds. What head h adds to the residual
stream is its context (its weights blending its values) through its own slice of the output
projection: c_h W_o[:, h]^T. The sub-layer's output is the sum of the heads' contributions plus
W_o's bias, so a silenced head (context zeroed) adds exactly nothing.

Also: attention rollout (Abnar & Zuidema 2020), which follows attention through the layers
assuming the residual connection carries half of each position's own vector (0.5 A + 0.5 I),
and an alignment score between a cross-attention map and a reference alignment.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from models.tokenizer import BOS_ID


@dataclass
class HeadCall:
    kind: str
    layer: int
    contributions: torch.Tensor  # (h, T_q, d): what each head adds to the residual stream
    weights: torch.Tensor  # (h, T_q, T_k): its attention
    output: torch.Tensor  # (T_q, d): the sub-layer's output, as the model computed it
    bias: torch.Tensor  # (d,): W_o's bias
    on: torch.Tensor  # (h,) 1 for a head that runs, 0 for a silenced one


def head_contributions(call) -> torch.Tensor:
    """One AttentionCall (batch row 0) -> (h, T_q, d): head h's context times its slice of W_o,
    the context zeroed for a silenced head as MultiHeadAttention zeroes it."""
    module = call.module
    v = module._split(module.W_v(call.key_in))[0]  # (h, T_k, d_head)
    context = call.weights[0] @ v  # (h, T_q, d_head)
    if call.head_mask is not None:
        context = context * call.head_mask.view(-1, 1, 1).to(context.dtype)
    W = module.W_o.weight.view(module.W_o.out_features, module.n_heads, module.d_head)  # (d, h, d_head)
    return torch.einsum("hqe,dhe->hqd", context, W)


def head_calls(model, src_ids: list[int], target_ids: list[int], head_mask=None,
               positional: bool | None = None) -> list[HeadCall]:
    """Every attention sub-layer of a teacher-forced pass ([BOS] + target_ids), head by head."""
    device = next(model.parameters()).device
    src, tgt = torch.tensor([src_ids], device=device), torch.tensor([[BOS_ID, *target_ids]], device=device)
    out = []
    with torch.inference_mode():
        for call in model.attention_calls(src, tgt, head_mask, positional):
            heads = call.weights.size(1)
            on = torch.ones(heads, device=device) if call.head_mask is None else call.head_mask.float()
            out.append(HeadCall(call.kind, call.layer, head_contributions(call), call.weights[0],
                                call.output[0], call.module.W_o.bias, on))
    return out


def rollout(weights: torch.Tensor, on: torch.Tensor | None = None) -> torch.Tensor:
    """Encoder maps (L, h, S, S) -> rollout after each layer (L, S, S): R_l = A'_l R_(l-1), R_(-1) = I,
    A'_l = 0.5 mean_h(A_l) + 0.5 I with rows renormalised; the mean is over the heads that run
    (`on`: (L, h), 0 for a silenced head; none running: A'_l = I)."""
    L, h, S, _ = weights.shape
    on = torch.ones(L, h, device=weights.device) if on is None else on.to(weights)
    eye = torch.eye(S, dtype=torch.float64, device=weights.device)
    out, current = [], eye
    for layer in range(L):
        kept = on[layer].double()
        mean = (weights[layer].double() * kept.view(-1, 1, 1)).sum(0) / kept.sum().clamp_min(1)
        step = 0.5 * mean + 0.5 * eye
        step = step / step.sum(-1, keepdim=True)
        current = step @ current
        out.append(current / current.sum(-1, keepdim=True))
    return torch.stack(out)


def overlap(a: torch.Tensor, b: torch.Tensor) -> float:
    """Mean over rows of sum_j min(a_ij, b_ij): 1 when the two row distributions are equal, 0 when
    they share no key."""
    return float(torch.minimum(a.double(), b.double()).sum(-1).mean())


def reference_alignment(model, src_ids: list[int], target_ids: list[int]) -> torch.Tensor:
    """A one-head model's cross-attention (T+1, S), teacher-forced on [BOS] + target_ids: on its own
    greedy translation, the map greedy search made (the decoder is causal)."""
    device = next(model.parameters()).device
    with torch.inference_mode():
        src, tgt = torch.tensor([src_ids], device=device), torch.tensor([[BOS_ID, *target_ids]], device=device)
        output = model(src, tgt)
    return output.attentions["cross"][0, 0, 0]
