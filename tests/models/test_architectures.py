"""What each architecture says it has inside: the server and the page choose experiments from it."""

from __future__ import annotations

import pytest
import torch

from models.architectures import MODEL_NAMES, build, default_config, describe
from models.outputs import ATTENTION_KINDS
from tests.tiny import tiny_config


@pytest.mark.parametrize("name", MODEL_NAMES)
def test_capabilities_match_what_the_forward_pass_returns(name):
    config = tiny_config(name, vocab_size=40)
    model = build(config).eval()
    output = model(torch.tensor([[5, 6, 7]]), torch.tensor([[1, 8, 9]]))
    has = describe(config)
    assert has.attention_kinds == tuple(k for k in ATTENTION_KINDS if k in output.attentions)
    assert has.gates == (output.encoder_gates is not None)
    assert has.switches == hasattr(model, "head_mask")
    for kind in has.attention_kinds:
        assert output.attentions[kind].shape[1:3] == (has.layers, has.heads)


def test_the_story_s_five_are_told_apart():
    caps = {name: describe(default_config(name, 8000)) for name in MODEL_NAMES}
    assert [n for n, c in caps.items() if c.recurrent] == ["rnn", "lstm", "lstm-additive", "lstm-dot"]
    assert [n for n, c in caps.items() if c.cross_attention] == ["lstm-additive", "lstm-dot", "transformer"]
    assert (caps["transformer"].layers, caps["transformer"].heads) == (3, 4)
    assert len({c.summary for c in caps.values()}) == 5
