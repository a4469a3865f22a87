"""What a forward pass returns: logits plus the internals the app draws. Nothing is kept on the
module between calls, so one loaded model can serve many threads at once."""

from __future__ import annotations

from dataclasses import dataclass, field, fields, is_dataclass, replace

import torch
import torch.nn.functional as F
from torch import nn

ATTENTION_KINDS = ("cross", "encoder", "decoder")


class NonFiniteError(ArithmeticError):
    """A model computed a NaN or an infinity where a measurement needs a finite number (damaged
    weights, or an overflow on some input): raised where it arises, so the caller can tell it from
    bad input (the server answers it 503)."""


@dataclass
class ModelOutput:
    logits: torch.Tensor  # (B, T, V): next-token scores at each target position
    # kind -> (B, layers, heads, T_q, T_k); kinds in ATTENTION_KINDS; empty for no-attention models
    attentions: dict[str, torch.Tensor] = field(default_factory=dict)
    encoder_hidden: torch.Tensor | None = None  # (B, S, H) recurrent states or last-layer outputs
    encoder_gates: torch.Tensor | None = None  # (B, S, 3, H): LSTM input, forget, output gates


class TiedEmbedding(nn.Embedding):
    """Token embeddings E that are also the output projection (Press & Wolf 2017): a token goes in
    as its row of E, and a state x comes out as its score against every row, logits = x E^T + b."""

    def logits(self, x: torch.Tensor, bias: torch.Tensor | None = None) -> torch.Tensor:
        """(..., d) -> (..., V)."""
        return F.linear(x, self.weight, bias)


def select_batch(obj, index: torch.Tensor):
    """Pick batch rows `index` from every tensor inside `obj` (tensors, tuples, lists, dataclasses).

    Beam search uses it to follow the surviving hypotheses. Tensors without a batch axis are
    marked by living in a dataclass field named in that class's `SHARED` tuple.
    """
    if isinstance(obj, torch.Tensor):
        return obj.index_select(0, index)
    if isinstance(obj, tuple | list):
        return type(obj)(select_batch(o, index) for o in obj)
    if is_dataclass(obj):
        shared = getattr(obj, "SHARED", ())
        return replace(
            obj,
            **{
                f.name: select_batch(getattr(obj, f.name), index)
                for f in fields(obj)
                if f.name not in shared
            },
        )
    return obj
