"""The parallel chapter's timing loop on a fake clock, and one timed encoder call."""

from __future__ import annotations

import pytest
import torch

from models.architectures import build
from models.config import Seq2SeqConfig, TransformerConfig
from models.probes.timing import LENGTHS, encoder_size, measure, random_ids, time_encode
from models.tokenizer import UNK_ID


class FakeClock:
    """Each call of `run` takes `length / 1000 * factor[name]` seconds of a clock that only it moves."""

    def __init__(self, factor: dict[str, float]):
        self.now, self.factor, self.calls = 0.0, factor, []

    def __call__(self) -> float:
        return self.now

    def run(self, name: str, length: int) -> float:
        seconds = length / 1000 * self.factor[name] * (1 + 0.1 * (len(self.calls) % 3))  # some spread
        self.now += seconds
        self.calls.append((name, length))
        return seconds


def test_medians_of_every_length_after_a_warm_up():
    clock = FakeClock({"a": 1.0, "b": 0.5})
    seen = []
    timings = measure(clock.run, ["a", "b"], [10, 100], repeats=3, limit_s=60, clock=clock,
                      progress=lambda done, total: seen.append((done, total)))
    assert clock.calls[:4] == [("a", 10), ("a", 100), ("b", 10), ("b", 100)]  # warm-up, not counted
    assert clock.calls[4:8] == [("a", 10), ("b", 10), ("a", 100), ("b", 100)]  # the models side by side
    assert len(clock.calls) == 4 + 3 * 4 and seen[-1] == (12, 12)
    a10 = timings["a"][0]
    assert (a10.length, a10.repeats) == (10, 3)
    assert a10.median_ms == pytest.approx(sorted(10 * (1 + 0.1 * (i % 3)) for i in (4, 8, 12))[1])


def test_no_pass_starts_after_the_limit_but_the_first_runs_in_full():
    clock = FakeClock({"a": 1.0, "b": 1.0})
    timings = measure(clock.run, ["a", "b"], [100, 1000], repeats=5, limit_s=0.0, clock=clock)
    assert all(t.repeats == 1 for rows in timings.values() for t in rows)
    clock = FakeClock({"a": 1.0, "b": 1.0})  # a pass takes ~2.2 s of the fake clock (+ 2.2 s warm-up)
    timings = measure(clock.run, ["a", "b"], [100, 1000], repeats=50, limit_s=10.0, clock=clock)
    repeats = [t.repeats for rows in timings.values() for t in rows]
    assert 1 < min(repeats) and max(repeats) - min(repeats) <= 1 and max(repeats) < 50
    assert clock.now < 10.0 + 1.3  # at most one call past the limit


def test_random_ids_are_ordinary_pieces_and_repeat():
    ids = random_ids(500, 60, "cpu")
    assert ids.shape == (1, 500) and int(ids.min()) > UNK_ID and int(ids.max()) < 60
    assert torch.equal(ids, random_ids(500, 60, "cpu"))
    assert list(LENGTHS) == sorted(LENGTHS) and LENGTHS[0] == 10 and LENGTHS[-1] == 1000 and len(LENGTHS) >= 8


@pytest.mark.parametrize("config", [Seq2SeqConfig(vocab_size=60, d_embed=8, d_hidden=16),
                                    TransformerConfig(vocab_size=60, d_model=16, n_heads=2, n_encoder_layers=1,
                                                      n_decoder_layers=1, d_ff=32, max_len=32)])
def test_one_timed_call_encodes_any_length_and_leaves_the_threads_as_they_were(config):
    model = build(config).eval()
    before = torch.get_num_threads()
    assert time_encode(model, random_ids(100, 60, "cpu"), threads=1) > 0  # past the Transformer's 32
    assert torch.get_num_threads() == before
    size = encoder_size(model)
    assert (size["cell"] == "transformer") == isinstance(config, TransformerConfig)
    assert (size["heads"] is None) == (size["embeddings"] is not None)
