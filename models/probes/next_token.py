"""The prediction chapter: next-token prediction gives a label at every position.

A translation of T pieces (with its closing <eos>) is T training examples, not one: at position t
the decoder has read the source and the pieces before t, and the piece at t is the label. One
teacher-forced pass scores all T at once (the causal mask keeps each position from seeing its
label), which is what makes the objective cheap to train in parallel. The loss at t is the cross-
entropy -ln p(y_t | y_<t, x) in nats (natural log: 0 when the model gives the label probability 1,
ln V when it spreads it evenly over the V pieces); training minimises their mean.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from models.tokenizer import BOS_ID, EOS_ID


@dataclass
class PositionLosses:
    labels: list[int]  # the target pieces scored, <eos> last: one label per position
    losses: torch.Tensor  # (T,): -ln p(label_t | labels before t, source), nats
    mean: float  # the mean over positions: the teacher-forced loss training minimises


def position_losses(model, src_ids: list[int], tgt_ids: list[int]) -> PositionLosses:
    """The teacher-forced per-position loss of `tgt_ids` (without <bos> or <eos>; <eos> is added as
    the last label) given `src_ids`, from one forward pass in eval mode, over the full vocabulary."""
    device = next(model.parameters()).device
    labels = [*tgt_ids, EOS_ID]
    with torch.inference_mode():
        src = torch.tensor([src_ids], device=device)
        tgt_in = torch.tensor([[BOS_ID, *tgt_ids]], device=device)
        log_p = torch.log_softmax(model(src, tgt_in).logits[0].double(), dim=-1)  # (T, V)
        losses = -log_p.gather(1, torch.tensor(labels, device=device).unsqueeze(1)).squeeze(1)
    return PositionLosses(labels, losses.cpu(), float(losses.mean()))
