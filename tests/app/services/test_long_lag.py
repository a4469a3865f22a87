"""The long-lag experiment as the server serves it, from the results and tiny checkpoints shipped."""

from __future__ import annotations

import pytest

from app.config import REPO_ROOT
from app.runtime.errors import InvalidOptionError, NoResultsError
from app.runtime.loading import load_registry
from app.services.long_lag import lag_gradients, results
from tests.app.answers import sent

SHIPPED = REPO_ROOT / "checkpoints"


@pytest.fixture(scope="module")
def registry():
    with load_registry(SHIPPED, names=(), device="cpu", cache_size=0) as registry:  # the tokenizer only
        yield registry


def test_results_name_the_lag_where_each_cell_falls_to_chance(registry):
    body = sent(results(registry))
    assert body["chance"] == 1 / body["task"]["symbols"]
    assert set(body["chance_lag"]) == {"blank", "noise"}
    for filler, cells in body["chance_lag"].items():
        lags = {c: [r["lag"] for r in body["runs"] if (r["filler"], r["cell"]) == (filler, c)] for c in cells}
        assert lags["rnn"] == lags["lstm"] == sorted(lags["rnn"])
        for cell, lag in cells.items():
            if lag is not None:
                at = next(r for r in body["runs"] if (r["filler"], r["cell"], r["lag"]) == (filler, cell, lag))
                assert at["accuracy"] < body["chance"] + 0.05


def test_gradients_of_the_tiny_models_at_a_lag(registry):
    lag = sent(results(registry))["runs"][0]["lag"]
    body = sent(lag_gradients(registry, lag, "noise"))
    assert len(body["tokens"]) == lag + 2
    assert {(c["model"], c["weights"]) for c in body["curves"]} == {
        ("rnn", "trained"), ("rnn", "initialized"), ("lstm", "trained"), ("lstm", "initialized")}
    with pytest.raises(InvalidOptionError):
        sent(lag_gradients(registry, 7000))


def test_no_results_is_a_clear_error(tmp_path, tiny_checkpoints):
    with load_registry(tiny_checkpoints, names=(), device="cpu") as registry:
        with pytest.raises(NoResultsError, match="models.long_lag"):
            sent(results(registry))
