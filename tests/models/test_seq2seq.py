"""The recurrent translation models (models/seq2seq.py)."""

import dataclasses

import pytest
import torch

from models.architectures import MODEL_NAMES, build
from tests.tiny import tiny_config

RECURRENT = [name for name in MODEL_NAMES if name != "transformer"]


@pytest.mark.parametrize("name", RECURRENT)
@torch.no_grad()
def test_a_decoding_step_gives_exactly_what_the_general_decoder_pass_gives(name):
    """`decode` takes the one-token path (`decode_step`) in eval mode. With dropout at 0, training
    mode takes the general path over the same formulas: logits, map and state agree bit for bit,
    for two sentences, one with padding."""
    torch.manual_seed(0)
    model = build(dataclasses.replace(tiny_config(name, 40), dropout=0.0))
    src = torch.tensor([[5, 9, 12, 7], [8, 6, 0, 0]])
    memory = model.eval().encode(src)
    fast_cache = slow_cache = None
    for token in ([1, 1], [7, 9], [8, 10], [3, 4]):
        tgt = torch.tensor(token).unsqueeze(1)
        fast = model.eval().decode(memory, tgt, fast_cache)
        slow = model.train().decode(memory, tgt, slow_cache)
        assert torch.equal(fast[0], slow[0])
        assert fast[1].keys() == slow[1].keys()
        for kind in fast[1]:
            assert torch.equal(fast[1][kind], slow[1][kind])
        fast_cache, slow_cache = fast[2], slow[2]
        states = (fast_cache, slow_cache) if isinstance(fast_cache, tuple) else ((fast_cache,), (slow_cache,))
        assert all(torch.equal(a, b) for a, b in zip(*states, strict=True))
    if "cross" in fast[1]:
        assert fast[1]["cross"].shape == (2, 1, 1, 1, 4)
        assert torch.all(fast[1]["cross"][1, ..., 2:] == 0)  # the padded source slots
