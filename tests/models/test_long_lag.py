"""The long-lag task, its tiny models, and the shipped results they must reproduce."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from models import checkpoint, long_lag

SHIPPED = Path(__file__).resolve().parents[2] / "checkpoints" / "long-lag"


def test_a_sequence_is_signal_filler_query():
    ids, answers = long_lag.sequences(50, 7, torch.Generator().manual_seed(0))
    assert ids.shape == (50, 9)
    assert torch.equal(ids[:, 0], answers) and (answers < long_lag.SYMBOLS).all()
    assert (ids[:, 1:-1] == long_lag.BLANK).all() and (ids[:, -1] == long_lag.QUERY).all()
    noisy, _ = long_lag.sequences(50, 7, torch.Generator().manual_seed(0), "noise")
    assert (noisy[:, 1:-1] > long_lag.QUERY).all() and (noisy[:, 1:-1] < long_lag.VOCAB["noise"]).all()
    assert len(set(noisy[:, 1:-1].flatten().tolist())) == long_lag.NOISE


def test_the_initialization_is_rebuilt_bit_for_bit_and_leaves_the_caller_s_randomness_alone():
    config = long_lag.LagConfig(cell="lstm", filler="noise", vocab_size=long_lag.VOCAB["noise"], lag=5)
    torch.manual_seed(123)
    before = torch.rand(1)
    torch.manual_seed(123)
    a = long_lag.initialized(config, seed=0)
    assert torch.equal(torch.rand(1), before)
    b = long_lag.initialized(config, seed=0)
    assert all(torch.equal(x, y) for x, y in zip(a.state_dict().values(), b.state_dict().values(), strict=True))


def test_the_shipped_results_match_the_shipped_checkpoints():
    """Each tiny checkpoint, scored again on the held-out sequences, gives the accuracy on file."""
    results = checkpoint.read_json(SHIPPED / long_lag.RESULTS)
    assert results, "checkpoints/long-lag/results.json is missing: python -m models.long_lag"
    expected = {(f, c, lag) for f, lags in long_lag.LAGS.items() for c in long_lag.CELLS for lag in lags}
    assert {(r["filler"], r["cell"], r["lag"]) for r in results["runs"]} == expected
    for run in results["runs"]:
        folder = SHIPPED / long_lag.run_name(run["filler"], run["cell"], run["lag"])
        assert (folder / checkpoint.WEIGHTS).stat().st_size < 1_000_000
        model = long_lag.load(folder)
        assert long_lag.accuracy(model) == pytest.approx(run["accuracy"], abs=1e-4), folder.name


@pytest.mark.slow
def test_an_lstm_learns_a_short_lag(tmp_path):
    lags = {"noise": (5,)}
    results = long_lag.train_all(tmp_path, ("noise",), ("lstm",), steps=300, lags=lags)
    assert results["runs"][0]["accuracy"] > 0.9
    assert (tmp_path / "noise-lstm-lag5" / checkpoint.WEIGHTS).exists()
    again = long_lag.train_all(tmp_path, ("noise",), ("lstm",), steps=300, lags=lags)  # saved: skipped
    assert again["runs"] == results["runs"]
