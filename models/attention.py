"""Attention, derived: score each key against a query, softmax the scores, blend the values.

Every attention here returns `(context, weights)`. Masks are boolean and say which keys a query
may look at (True = visible); they broadcast against the scores (B, [heads,] T_q, T_k).
"""

from __future__ import annotations

import math

import torch
from torch import nn


def masked_softmax(scores: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
    """Softmax over the last axis where hidden keys get exactly zero weight.

    The most negative finite number (not -inf) keeps a fully hidden row finite instead of NaN.
    """
    if mask is not None:
        scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
    return torch.softmax(scores, dim=-1)


def padding_mask(lengths: torch.Tensor, T: int) -> torch.Tensor:
    """(B,) lengths -> (B, T) True where a position holds a real token."""
    return torch.arange(T, device=lengths.device).unsqueeze(0) < lengths.unsqueeze(1)


def mask_if_needed(mask: torch.Tensor) -> torch.Tensor | None:
    """`mask`, or None when it hides nothing (a single sentence has no padding): no masking to pay
    for at every step."""
    return None if bool(mask.all()) else mask


def causal_mask(T_q: int, T_k: int | None = None, device=None) -> torch.Tensor:
    """(T_q, T_k) True where key j is not in query i's future.

    With T_k > T_q the queries are the last T_q positions (incremental decoding with a cache).
    """
    T_k = T_q if T_k is None else T_k
    offset = T_k - T_q
    i = torch.arange(T_q, device=device).unsqueeze(1)
    j = torch.arange(T_k, device=device).unsqueeze(0)
    return j <= i + offset


def _key_mask(mask: torch.Tensor | None) -> torch.Tensor | None:
    """(B, T_k) key padding -> (B, 1, T_k) so it broadcasts over queries."""
    return mask.unsqueeze(1) if mask is not None and mask.dim() == 2 else mask


class AdditiveAttention(nn.Module):
    """Bahdanau et al. (2014): a one-hidden-layer network scores each (query, key) pair.

        score(s, h_j) = v^T tanh(W s + U h_j)

    U h_j does not depend on the query, so a decoder computes it once per sentence (`project`)
    and passes it to every step, as the paper suggests, instead of once per output token.
    """

    formula = "v^T tanh(W s + U h_j)"  # the score of query s against key h_j, as the page writes it

    def __init__(self, d_query: int, d_key: int, d_attn: int):
        super().__init__()
        self.W = nn.Linear(d_query, d_attn, bias=False)
        self.U = nn.Linear(d_key, d_attn)
        self.v = nn.Linear(d_attn, 1, bias=False)

    @staticmethod
    def parameter_shapes(d_query: int, d_key: int, d_attn: int) -> list[tuple[int, ...]]:
        """Its parameters' shapes in the order `__init__` draws them: W, U (weight, bias), v."""
        return [(d_attn, d_query), (d_attn, d_key), (d_attn,), (1, d_attn)]

    def project(self, keys: torch.Tensor) -> torch.Tensor:
        """(B, T_k, d_k) -> U h_j: (B, T_k, a)."""
        return self.U(keys)

    def score(self, query: torch.Tensor, keys: torch.Tensor, projected: torch.Tensor | None = None):
        # query: (B, T_q, d_q), keys: (B, T_k, d_k), projected: (B, T_k, a) -> (B, T_q, T_k)
        projected = self.project(keys) if projected is None else projected
        hidden = torch.tanh(self.W(query).unsqueeze(2) + projected.unsqueeze(1))  # (B, Tq, Tk, a)
        return self.v(hidden).squeeze(-1)

    def forward(self, query, keys, mask=None, projected=None) -> tuple[torch.Tensor, torch.Tensor]:
        """`projected`: `project(keys)` computed beforehand (None: computed here)."""
        weights = masked_softmax(self.score(query, keys, projected), _key_mask(mask))  # (B, T_q, T_k)
        return weights @ keys, weights  # context (B, T_q, d_k)


class DotAttention(nn.Module):
    """Luong et al. (2015): the score is the plain dot product s . h_j (no parameters)."""

    formula = "s . h_j"

    def project(self, keys: torch.Tensor) -> None:
        """Nothing to compute ahead: the keys are scored as they are."""
        return None

    def score(self, query: torch.Tensor, keys: torch.Tensor) -> torch.Tensor:
        return query @ keys.transpose(1, 2)  # (B, T_q, T_k)

    def forward(self, query, keys, mask=None, projected=None) -> tuple[torch.Tensor, torch.Tensor]:
        weights = masked_softmax(self.score(query, keys), _key_mask(mask))
        return weights @ keys, weights


def scaled_dot_product_attention(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor | None = None,
    scale: bool = True, dropout: nn.Module | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """softmax(Q K^T / sqrt(d_k)) V. Dividing by sqrt(d_k) keeps the scores' spread near 1 so the
    softmax does not saturate as d_k grows (the scaling chapter). q: (..., T_q, d_k), k/v: (..., T_k, d_k).
    Dropout, when given, applies to the weights that blend the values, not to those returned."""
    scores = q @ k.transpose(-2, -1)
    if scale:
        scores = scores / math.sqrt(q.size(-1))
    weights = masked_softmax(scores, mask)
    blend = dropout(weights) if dropout is not None else weights
    return blend @ v, weights


class MultiHeadAttention(nn.Module):
    """Vaswani et al. (2017): h heads each attend in their own d_model/h-wide subspace."""

    def __init__(self, d_model: int, n_heads: int, dropout: float = 0.0):
        super().__init__()
        self.n_heads, self.d_head = n_heads, d_model // n_heads
        self.W_q = nn.Linear(d_model, d_model)
        self.W_k = nn.Linear(d_model, d_model)
        self.W_v = nn.Linear(d_model, d_model)
        self.W_o = nn.Linear(d_model, d_model)
        self.dropout = nn.Dropout(dropout)

    def _split(self, x: torch.Tensor) -> torch.Tensor:
        B, T, _ = x.shape
        return x.view(B, T, self.n_heads, self.d_head).transpose(1, 2)  # (B, h, T, d_head)

    def keys_values(self, key: torch.Tensor, value: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Project keys and values once: (B, T_k, d) -> two (B, h, T_k, d_head). Decoding reuses
        them at every step instead of projecting the same source (and past) again."""
        return self._split(self.W_k(key)), self._split(self.W_v(value))

    def forward(
        self, query: torch.Tensor, key: torch.Tensor | None, value: torch.Tensor | None,
        mask: torch.Tensor | None = None, head_mask: torch.Tensor | None = None,
        kv: tuple[torch.Tensor, torch.Tensor] | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """query: (B, T_q, d), key/value: (B, T_k, d) or `kv` from `keys_values`; mask broadcasts
        to (B, h, T_q, T_k); head_mask: (h,) with 0 for a switched-off head.
        Returns (B, T_q, d), (B, h, T_q, T_k)."""
        q = self._split(self.W_q(query))
        k, v = kv if kv is not None else self.keys_values(key, value)
        if mask is not None and mask.dim() == 3:
            mask = mask.unsqueeze(1)  # same mask for every head
        context, weights = scaled_dot_product_attention(q, k, v, mask, dropout=self.dropout)
        if head_mask is not None:
            context = context * head_mask.view(1, -1, 1, 1).to(context.dtype)
        B, _, T_q, _ = context.shape
        context = context.transpose(1, 2).reshape(B, T_q, -1)  # (B, T_q, d): heads side by side
        return self.W_o(context), weights
