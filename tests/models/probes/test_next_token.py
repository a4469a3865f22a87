"""The prediction chapter's probe: the per-position loss of one teacher-forced pass is, at each position, the
loss of decoding that position alone from the pieces before it."""

from __future__ import annotations

import math

import torch

from models.probes.next_token import position_losses
from models.tokenizer import BOS_ID, EOS_ID
from tests.models.probes import tiny_transformer

SRC, TGT = [5, 9, 4, 7], [8, 12, 6]


def test_one_label_per_position_each_scored_as_if_decoded_alone():
    model = tiny_transformer()
    result = position_losses(model, SRC, TGT)
    assert result.labels == [*TGT, EOS_ID] and result.losses.shape == (4,)
    src = torch.tensor([SRC])
    with torch.inference_mode():
        for t, label in enumerate(result.labels):
            logits = model(src, torch.tensor([[BOS_ID, *TGT[:t]]])).logits[0, -1].double()
            alone = -torch.log_softmax(logits, -1)[label]
            assert math.isclose(float(result.losses[t]), float(alone), rel_tol=1e-4, abs_tol=1e-6)
    assert math.isclose(result.mean, float(result.losses.mean()))
    assert all(loss > 0 for loss in result.losses.tolist())


def test_a_label_the_model_finds_likelier_costs_fewer_nats():
    """At the first position the loss of each candidate label orders them as the logits do."""
    model = tiny_transformer()
    with torch.inference_mode():
        logits = model(torch.tensor([SRC]), torch.tensor([[BOS_ID]])).logits[0, 0]
    best, worst = int(logits[2:].argmax()) + 2, int(logits[2:].argmin()) + 2
    assert position_losses(model, SRC, [best]).losses[0] < position_losses(model, SRC, [worst]).losses[0]
