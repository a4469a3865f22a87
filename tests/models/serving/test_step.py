"""The Transformer's one-position decoding step (models/serving/step.py): the decoder layers'
`forward` for one new token per sentence, so the same numbers, bit for bit."""

import copy
import dataclasses

import pytest
import torch

from models.architectures import build
from models.config import TransformerConfig
from models.serving import served
from models.serving.step import ServedTransformer, StepWeights, _product
from models.transformer import Transformer
from tests.models.serving.test_precision import _fp16_numbers
from tests.tiny import tiny_config

CFG = TransformerConfig(vocab_size=40, d_model=32, n_heads=4, n_encoder_layers=2, n_decoder_layers=2,
                        d_ff=64, dropout=0.0)


TOKENS = ([1, 1], [7, 9], [8, 10], [3, 4])


def _decode(model, memory, tokens=TOKENS) -> list[torch.Tensor]:
    """Every logit, map and cached key and value of decoding `tokens` one position at a time."""
    cache, outputs = None, []
    for token in tokens:
        logits, weights, cache = model.decode(memory, torch.tensor(token).unsqueeze(1), cache)
        outputs += [logits, weights["decoder"], weights["cross"], *(t for kv in cache for t in kv)]
    return outputs


@pytest.mark.parametrize("layout", ["as-stored", "input-major"])
@torch.no_grad()
def test_a_decoding_step_gives_exactly_what_the_general_decoder_pass_gives(layout):
    """A served Transformer's `decode` takes the one-position `step` in eval mode; the layers'
    general `forward` (the trained model's own `decode`, without the source projected ahead), run
    on the same tokens with the same cache, must agree bit for bit: logits, both maps, the cache.
    Two sentences, one with padding, and heads switched off."""
    torch.manual_seed(5)
    plain = Transformer(CFG).eval()
    model = served(copy.deepcopy(plain), layout, "fp32", "python")
    assert isinstance(model, ServedTransformer)
    src = torch.tensor([[5, 9, 12, 7], [8, 6, 0, 0]])
    last = []
    for heads_off in ([], [("decoder", 1, 2), ("cross", 0, 1)]):
        memory = model.encode(src, head_mask=model.head_mask(heads_off) if heads_off else None)
        general = dataclasses.replace(memory, cross_kv=None)  # no projected source: the general pass
        fast = _decode(model, memory)
        # the trained model itself where it holds the weights the same way
        slow = _decode(plain if layout == "as-stored" else model, general)
        assert all(torch.equal(a, b) for a, b in zip(fast, slow, strict=True))
        logits, _, cross = fast[-3 - 2 * CFG.n_decoder_layers:][:3]  # the last step's
        assert torch.all(cross[1, ..., 2:] == 0)  # the padded source slots
        last.append(logits)
    assert not torch.equal(*last)  # the switched-off heads changed the step


@torch.inference_mode()
def test_a_step_projects_query_key_and_value_in_one_product_with_the_same_numbers():
    """With fp16 copies the step stacks the self-attention's W_q, W_k, W_v into one product: every
    logit, map and cached key and value as with three products, bit for bit."""
    torch.manual_seed(2)
    fp32 = _fp16_numbers(build(tiny_config("transformer", 300))).eval()
    half = served(fp32, "as-stored", "fp16-weights", "python")
    stacked = half.steps
    assert all(len(w.qkv) == 1 and w.qkv[0][0].shape == (3 * w.qkv[0][0].size(1), w.qkv[0][0].size(1))
               for w in stacked)
    three = [w._replace(qkv=tuple(_product(m) for m in (layer.self_attn.W_q, layer.self_attn.W_k,
                                                          layer.self_attn.W_v)))
             for w, layer in zip(stacked, half.decoder_layers, strict=True)]
    src = torch.tensor([[5, 9, 12, 7], [8, 6, 0, 0]])
    runs = []
    for steps in (stacked, three):
        half.steps = steps
        runs.append(_decode(half, half.encode(src)))
    assert all(torch.equal(a, b) for a, b in zip(*runs, strict=True))


def test_the_step_reads_each_layers_weights_gathered_once():
    torch.manual_seed(0)
    model = served(Transformer(CFG).eval(), "as-stored", "fp32", "python")
    assert len(model.steps) == CFG.n_decoder_layers and all(isinstance(w, StepWeights) for w in model.steps)
    layer = model.decoder_layers[0]
    assert model.steps[0].W_1[0] is layer.ff.W_1.weight
    assert model.steps[0].qkv[1][0] is layer.self_attn.W_k.weight
