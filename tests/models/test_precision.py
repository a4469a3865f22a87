"""fp16 copies of the weights (models/precision.py): the same numbers as the fp32 weights, read in
half the bytes and multiplied in fp32, so every translation, map and score agrees with the fp32
model within float rounding; whatever is differentiated uses the fp32 weights, exactly."""

import copy

import pytest
import torch
import torch.nn.functional as F

from models.architectures import MODEL_NAMES, build
from models.decoding import greedy
from models.layout import input_major
from models.precision import (
    PRECISIONS,
    Linear,
    half_weights,
    linear,
    precision_of,
    served_precision,
    with_precision,
)
from tests.models.agreement import SOURCES, assert_batches_and_gradients_agree, assert_decodings_agree
from tests.tiny import tiny_config

VOCAB = 300


def _fp16_numbers(model):
    """`model` with every weight rounded to fp16, as a model loaded from a checkpoint is."""
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(p.half().float())
    return model


def _pair(name, seed=0):
    """(fp32, fp16-weights) copies of one tiny untrained model with fp16 numbers."""
    torch.manual_seed(seed)
    fp32 = _fp16_numbers(build(tiny_config(name, VOCAB))).eval()
    return fp32, half_weights(copy.deepcopy(fp32))


@pytest.mark.parametrize("name", MODEL_NAMES)
def test_every_product_weight_gets_an_fp16_copy_of_the_same_numbers(name):
    fp32, half = _pair(name)
    assert precision_of(fp32) == "fp32" and precision_of(half) == "fp16-weights"
    for module in half.modules():
        if isinstance(module, Linear):
            assert hasattr(module.weight, "fp16_packed")
    assert hasattr(half.embed.weight, "fp16_packed")  # the tied output projection
    for (key, a), b in zip(fp32.named_parameters(), half.parameters(), strict=True):
        assert torch.equal(a, b), key  # the fp32 weights are untouched
    assert half.state_dict().keys() == fp32.state_dict().keys()


@torch.inference_mode()
def test_a_step_projects_query_key_and_value_in_one_product_with_the_same_numbers():
    """half_weights stacks each attention's W_q, W_k, W_v (with copies) into one product for the
    decoding step: every logit, map and cached key and value as with three products, bit for bit."""
    _, half = _pair("transformer", seed=2)
    stacked = {m: m.stacked_qkv for m in half.modules() if hasattr(m, "stacked_qkv")}
    assert stacked and all(s is not None and s[0].shape == (3 * s[0].size(1), s[0].size(1))
                           for s in stacked.values())
    src = torch.tensor([[5, 9, 12, 7], [8, 6, 0, 0]])
    runs = []
    for use in (True, False):
        for module, s in stacked.items():
            module.stacked_qkv = s if use else None
        memory, cache, outputs = half.encode(src), None, []
        for token in ([1, 1], [7, 9], [8, 10]):
            logits, weights, cache = half.decode(memory, torch.tensor(token).unsqueeze(1), cache)
            outputs += [logits, *weights.values(), *(t for kv in cache for t in kv)]
        runs.append(outputs)
    assert all(torch.equal(a, b) for a, b in zip(*runs, strict=True))


def test_weights_fp16_does_not_hold_get_no_copy():
    torch.manual_seed(0)
    model = half_weights(build(tiny_config("transformer", VOCAB)))  # fp32 initialization
    assert precision_of(model) == "fp32"


@pytest.mark.parametrize("shape", [(1, 16), (3, 16), (2, 5, 16)])
@pytest.mark.parametrize("bias", [True, False])
def test_linear_is_f_linear_within_float_rounding(shape, bias):
    torch.manual_seed(0)
    layer = _fp16_numbers(Linear(16, 40, bias=bias))
    half_weights(layer)
    x = torch.randn(shape)
    for rows in (x, x.transpose(0, -2) if x.dim() == 3 else x):  # a non-contiguous view too
        with torch.inference_mode():
            got = linear(rows, layer.weight, layer.bias)
        torch.testing.assert_close(got, F.linear(rows, layer.weight, layer.bias), atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("name", MODEL_NAMES)
def test_greedy_and_beam_search_agree_with_the_fp32_weights(name):
    for seed in range(2):
        assert_decodings_agree(*_pair(name, seed), logits_tol=1e-4, map_tol=1e-5)


@pytest.mark.parametrize("name", ["lstm-additive", "transformer"])
def test_batches_agree_and_gradients_use_the_fp32_weights(name):
    fp32, half = _pair(name)
    assert_batches_and_gradients_agree(fp32, input_major(half))  # the copies outlive a reordering


def test_with_precision_checks_the_name_and_serves_fp32_off_the_cpu():
    fp32, _ = _pair("lstm-dot")
    assert precision_of(with_precision(copy.deepcopy(fp32), "fp32")) == "fp32"
    assert precision_of(with_precision(copy.deepcopy(fp32), "fp16-weights")) == "fp16-weights"
    assert set(PRECISIONS) == {"fp32", "fp16-weights"}
    with pytest.raises(ValueError, match="one of fp32, fp16-weights"):
        with_precision(fp32, "int8")
    assert served_precision("fp16-weights", "cpu") == "fp16-weights"
    assert served_precision("fp16-weights", "cuda") == "fp32"  # fbgemm's products run on a CPU


def test_the_fp16_copies_serve_inference_and_never_a_gradient(monkeypatch):
    fp32, half = _pair("transformer")
    calls = []
    product = torch.fbgemm_linear_fp16_weight
    monkeypatch.setattr(torch, "fbgemm_linear_fp16_weight", lambda *a: calls.append(1) or product(*a))
    with torch.inference_mode():
        greedy(half, SOURCES[0], max_len=5)
    assert calls, "inference reads the fp16 copies"
    calls.clear()
    src, tgt = torch.tensor([SOURCES[0]]), torch.tensor([[1, 4, 5]])
    half(src, tgt).logits.sum().backward()
    assert not calls, "a differentiated product multiplies the fp32 weights"


def test_a_jacobian_through_a_copied_weight_is_the_fp32_jacobian():
    """torch.func transforms (chapter 3's step factors) run the fp32 product, like autograd does."""
    torch.manual_seed(0)
    layer = _fp16_numbers(Linear(8, 8))
    fp32_jacobian = torch.func.jacrev(layer)(torch.randn(8))
    half_weights(layer)
    with torch.no_grad():
        assert torch.equal(torch.func.jacrev(layer)(torch.randn(8)), fp32_jacobian)
