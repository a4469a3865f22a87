"""fp16 copies of the weights (models/serving/precision.py): the same numbers as the fp32 weights,
read in half the bytes and multiplied in fp32, so every translation, map and score agrees with the
fp32 model within float rounding; whatever is differentiated uses the fp32 weights, exactly."""

import copy
import warnings

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from models.architectures import MODEL_NAMES, build
from models.decoding import greedy
from models.outputs import TiedEmbedding
from models.serving import PRECISIONS, on_device, served
from models.serving.layout import input_major
from models.serving.precision import HalfLinear, HalfTiedEmbedding, half_weights, precision_of
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
def test_every_product_reads_an_fp16_copy_of_the_same_numbers(name):
    fp32, half = _pair(name)
    assert precision_of(fp32) == "fp32" and precision_of(half) == "fp16-weights"
    assert not any(type(m) is nn.Linear for m in half.modules())  # every product swapped
    assert isinstance(half.embed, HalfTiedEmbedding)  # the tied output projection
    for (key, a), b in zip(fp32.named_parameters(), half.parameters(), strict=True):
        assert torch.equal(a, b), key  # the fp32 weights are untouched
    assert half.state_dict().keys() == fp32.state_dict().keys()
    assert [v.dtype for v in half.state_dict().values()] == [v.dtype for v in fp32.state_dict().values()]


def test_serving_shares_the_parameters_and_draws_no_random_numbers():
    fp32, _ = _pair("transformer")
    before = dict(fp32.named_parameters())
    state = torch.get_rng_state()
    half = half_weights(fp32)
    assert torch.equal(state, torch.get_rng_state())
    assert all(p is before[k] for k, p in half.named_parameters())


def test_weights_fp16_does_not_hold_get_no_copy():
    torch.manual_seed(0)
    model = half_weights(build(tiny_config("transformer", VOCAB)))  # fp32 initialization
    assert precision_of(model) == "fp32"


@pytest.mark.parametrize("shape", [(1, 16), (3, 16), (2, 5, 16)])
@pytest.mark.parametrize("bias", [True, False])
def test_a_half_linear_is_f_linear_within_float_rounding(shape, bias):
    torch.manual_seed(0)
    layer = half_weights(_fp16_numbers(nn.Linear(16, 40, bias=bias)))
    assert isinstance(layer, HalfLinear)
    x = torch.randn(shape)
    for rows in (x, x.transpose(0, -2) if x.dim() == 3 else x):  # a non-contiguous view too
        with torch.inference_mode():
            got = layer(rows)
        torch.testing.assert_close(got, F.linear(rows, layer.weight, layer.bias), atol=1e-5, rtol=1e-5)


def test_a_tied_embedding_projects_within_float_rounding():
    torch.manual_seed(0)
    embed = _fp16_numbers(TiedEmbedding(40, 16, padding_idx=0))
    half, x, bias = half_weights(copy.deepcopy(embed)), torch.randn(3, 16), torch.randn(40)
    with torch.inference_mode():
        torch.testing.assert_close(half.logits(x, bias), embed.logits(x, bias), atol=1e-5, rtol=1e-5)
        assert torch.equal(half(torch.tensor([3, 0])), embed(torch.tensor([3, 0])))  # lookups: the fp32 rows


@pytest.mark.parametrize("name", MODEL_NAMES)
def test_greedy_and_beam_search_agree_with_the_fp32_weights(name):
    for seed in range(2):
        assert_decodings_agree(*_pair(name, seed), logits_tol=1e-4, map_tol=1e-5)


@pytest.mark.parametrize("name", ["lstm-additive", "transformer"])
def test_batches_agree_and_gradients_use_the_fp32_weights(name):
    fp32, half = _pair(name)
    assert_batches_and_gradients_agree(fp32, input_major(half))  # the copies outlive a reordering


def test_fp16_copies_are_served_on_a_cpu_only():
    fp32, _ = _pair("lstm-dot")
    assert precision_of(served(copy.deepcopy(fp32), "as-stored", "fp32")) == "fp32"
    assert precision_of(served(copy.deepcopy(fp32), "as-stored", "fp16-weights")) == "fp16-weights"
    assert set(PRECISIONS) == {"fp32", "fp16-weights"}
    with pytest.raises(ValueError, match="one of fp32, fp16-weights"):
        served(fp32, "as-stored", "int8")
    assert on_device("as-stored", "fp16-weights", "python", "cpu")[1] == "fp16-weights"
    assert on_device("as-stored", "fp16-weights", "python", "cuda")[1] == "fp32"  # fbgemm runs on a CPU


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


@pytest.mark.filterwarnings("ignore:`torch.jit.script` is deprecated:DeprecationWarning")  # torch.func.jvp
def test_a_jvp_and_a_jacobian_through_a_copied_weight_are_the_fp32_ones():
    """torch.func transforms (the gradients chapter's step factors) run the fp32 product, like autograd does,
    also under no_grad, where only the tensors say that a transform runs (a jvp's are dual)."""
    torch.manual_seed(0)
    layer = _fp16_numbers(nn.Linear(8, 8))
    x, v = torch.randn(8), torch.randn(8)
    fp32_jacobian, (_, fp32_jv) = torch.func.jacrev(layer)(x), torch.func.jvp(layer, (x,), (v,))
    half = half_weights(copy.deepcopy(layer))
    with torch.no_grad():
        assert torch.equal(torch.func.jacrev(half)(x), fp32_jacobian)
        assert torch.equal(torch.func.jvp(half, (x,), (v,))[1], fp32_jv)


def test_serving_leaves_no_warning_behind_and_no_filter_installed():
    """fbgemm's deprecation warnings are silenced where the copies are made, not process-wide."""
    filters = list(warnings.filters)
    fp32, _ = _pair("lstm-dot")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        half = half_weights(fp32)
        with torch.inference_mode():
            greedy(half, SOURCES[0], max_len=5)
    assert warnings.filters == filters
