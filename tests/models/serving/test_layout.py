"""The input-major layout (models/serving/layout.py): the same weights in another order in memory,
so every translation, map and score it gives is the stored layout's within float rounding."""

import copy

import pytest
import torch

from models.architectures import MODEL_NAMES, build
from models.serving import LAYOUTS, on_device, served
from models.serving.layout import input_major, is_wide, layout_of
from tests.models.agreement import assert_batches_and_gradients_agree, assert_decodings_agree
from tests.tiny import tiny_config

VOCAB = 300  # wider than every hidden size, so each model's embedding is a wide matrix


def _pair(name, seed=0):
    """(stored, input-major) copies of one tiny untrained model."""
    torch.manual_seed(seed)
    stored = build(tiny_config(name, VOCAB)).eval()
    return stored, input_major(copy.deepcopy(stored))


@pytest.mark.parametrize("name", MODEL_NAMES)
def test_wide_weights_lie_column_by_column_with_the_same_values(name):
    stored, moved = _pair(name)
    assert layout_of(stored) == "as-stored" and layout_of(moved) == "input-major"
    for (key, a), b in zip(stored.named_parameters(), moved.parameters(), strict=True):
        assert a.shape == b.shape and torch.equal(a, b), key
        if is_wide(a):
            assert b.stride() == (1, a.size(0)), key
        else:
            assert b.stride() == a.stride(), key  # narrow and square ones are left as they are
    assert moved.state_dict().keys() == stored.state_dict().keys()


def test_a_tied_matrix_is_reordered_once_and_stays_tied():
    stored, moved = _pair("transformer")
    assert is_wide(moved.embed.weight)
    assert len(list(moved.parameters())) == len(list(stored.parameters()))
    assert input_major(moved) is moved and layout_of(moved) == "input-major"  # twice: no change


@pytest.mark.parametrize("name", MODEL_NAMES)
def test_greedy_and_beam_search_agree_with_the_stored_layout(name):
    for seed in range(2):
        assert_decodings_agree(*_pair(name, seed), logits_tol=1e-5, map_tol=1e-6)


@pytest.mark.parametrize("name", ["lstm", "transformer"])
def test_batches_and_gradients_agree_too(name):
    assert_batches_and_gradients_agree(*_pair(name))


def test_the_stored_order_is_one_setting_away_and_kept_off_the_cpu():
    stored, _ = _pair("lstm-dot")
    assert layout_of(served(copy.deepcopy(stored), "as-stored", "fp32")) == "as-stored"
    assert layout_of(served(copy.deepcopy(stored), "input-major", "fp32")) == "input-major"
    assert set(LAYOUTS) == {"input-major", "as-stored"}
    with pytest.raises(ValueError, match="one of input-major, as-stored"):
        served(stored, "column-major", "fp32")
    assert on_device("input-major", "fp32", "python", "cpu")[0] == "input-major"
    # cuBLAS reads either order at full speed
    assert on_device("input-major", "fp32", "python", "cuda")[0] == "as-stored"
