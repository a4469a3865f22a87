"""The served searches run on one intra-op thread; the derivation's own searches leave the count
alone; either way the caller's count is what it was afterwards."""

import pytest
import torch

from models import decoding
from models.architectures import build
from models.config import TransformerConfig
from models.decoding import Stopped
from models.serving import threads

SMALL = TransformerConfig(vocab_size=40, d_model=16, n_heads=2, n_encoder_layers=1, n_decoder_layers=1, d_ff=32)
SEARCHES = ["greedy", "greedy_tokens", "beam_search"]


def _counting_model():
    """A tiny Transformer that records the intra-op thread count at each decoder step."""
    torch.manual_seed(0)
    model = build(SMALL).eval()
    seen, decode = [], model.decode

    def counting(*args, **kwargs):
        seen.append(torch.get_num_threads())
        return decode(*args, **kwargs)

    model.decode = counting
    return model, seen


@pytest.fixture
def two_threads():
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    yield
    torch.set_num_threads(before)


@pytest.mark.parametrize("search", SEARCHES)
@torch.inference_mode()
def test_a_served_search_runs_on_one_thread_and_gives_the_threads_back(search, two_threads):
    model, seen = _counting_model()
    run = getattr(threads, search)
    run(model, [5, 9, 12], max_len=6)
    assert seen and set(seen) == {1} and torch.get_num_threads() == 2
    with pytest.raises(Stopped):  # also when the search fails
        run(model, [5, 9, 12], max_len=6, stop=lambda: True)
    assert torch.get_num_threads() == 2


@pytest.mark.parametrize("search", SEARCHES)
@torch.inference_mode()
def test_the_derivations_search_knows_no_thread_policy(search, two_threads):
    model, seen = _counting_model()
    getattr(decoding, search)(model, [5, 9, 12], max_len=6)
    assert seen and set(seen) == {2}


@torch.inference_mode()
def test_served_and_derived_searches_give_the_same_output():
    model, _ = _counting_model()
    for search in SEARCHES:
        a = getattr(threads, search)(model, [5, 9, 12, 7], max_len=8)
        b = getattr(decoding, search)(model, [5, 9, 12, 7], max_len=8)
        assert (a == b) if search == "greedy_tokens" else (a.tokens == b.tokens)


def test_intra_op_restores_the_count_after_an_error(two_threads):
    with pytest.raises(RuntimeError), threads.intra_op(1):
        assert torch.get_num_threads() == 1
        raise RuntimeError
    assert torch.get_num_threads() == 2
