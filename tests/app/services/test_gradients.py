"""The gradient service: lengths, which models are measured, the gates as JSON."""

from __future__ import annotations

import threading

import pytest
import torch

from app.runtime.errors import Abandoned, InvalidOptionError
from app.runtime.shares import Meter
from app.services.gradients import GATE_UNITS, gate_summary, gradient_curves, recurrent_models, repeat_to
from models.decoding import Stopped
from tests.app.answers import sent
from tests.app.conftest import TEXT


def test_repeat_to():
    assert repeat_to([1, 2, 3], 7, 200) == [1, 2, 3, 1, 2, 3, 1]
    assert repeat_to([1, 2, 3], 2, 200) == [1, 2]
    with pytest.raises(InvalidOptionError):
        repeat_to([1], 201, 200)


def test_by_default_the_recurrent_models_without_attention_are_measured(registry):
    assert [e.name for e in recurrent_models(registry, ())] == ["rnn", "lstm"]
    assert [e.name for e in recurrent_models(registry, ("lstm-dot",))] == ["lstm-dot"]
    with pytest.raises(InvalidOptionError, match="transformer"):
        recurrent_models(registry, ("transformer",))


def test_the_length_limit_is_the_registry_s(registry):
    answer = sent(gradient_curves(registry, TEXT, registry.limits.max_gradient_length))
    assert len(answer["tokens"]) == registry.limits.max_gradient_length
    with pytest.raises(InvalidOptionError, match="1 to 200") as error:
        sent(gradient_curves(registry, TEXT, registry.limits.max_gradient_length + 1))
    assert error.value.field == "length"


def test_gates_come_from_the_first_lstm_with_the_units_that_vary_most(registry):
    answer = sent(gradient_curves(registry, TEXT, 7))
    assert [c["model"] for c in answer["curves"]] == ["rnn", "lstm"]
    gates = answer["gates"]
    assert gates["model"] == "lstm" and len(gates["units"]) == min(GATE_UNITS, 32)
    assert len(gates["forget"]) == 7 and len(gates["forget"][0]) == len(gates["units"])
    assert all(0 <= v <= 1 for v in gates["mean"]["input"])


def test_gate_summary_rounds_a_known_tensor():
    gates = torch.rand(4, 3, 60, generator=torch.Generator().manual_seed(0))
    summary = sent(gate_summary("lstm", gates))
    assert len(summary["units"]) == GATE_UNITS and summary["units"] == sorted(summary["units"])
    assert summary["mean"]["output"] == pytest.approx(gates[:, 2].mean(-1).tolist(), abs=1e-3)


def test_initialized_curves_are_rebuilt_identically_and_differ_from_the_trained(registry):
    first = sent(gradient_curves(registry, TEXT, 12, initialized=True))
    registry.states.untrained.clear()  # rebuilt from the config and seed, not remembered
    again = sent(gradient_curves(registry, TEXT, 12, initialized=True))
    assert first == again
    assert [(c["model"], c["weights"]) for c in first["curves"]] == [
        ("rnn", "trained"), ("rnn", "initialized"), ("lstm", "trained"), ("lstm", "initialized")]
    assert first["curves"][0]["norm"] != first["curves"][1]["norm"]
    assert first["gates"]["model"] == "lstm"


def test_factors_come_with_each_curve_when_asked(registry):
    plain = sent(gradient_curves(registry, TEXT, 9))
    assert "step_factor" not in plain["curves"][0]
    rnn, lstm = sent(gradient_curves(registry, TEXT, 9, factors=True))["curves"]
    for curve in (rnn, lstm):
        assert len(curve["state_norm"]) == len(curve["step_factor"]) == 9 and len(curve["shrink"]) == 8
        assert all(s <= f * 1.05 for s, f in zip(curve["shrink"], curve["step_factor"], strict=False))
    assert "forget_mean" in lstm and "forget_mean" not in rnn


def test_compares_run_inside_the_factors_and_change_no_number(registry, monkeypatch):
    """The experiment pauses between power iterations for queued interactive work (worker.pause):
    a compare queued from inside it runs before the experiment ends, and the experiment's answer
    is the one it gives alone."""
    from app.services.comparison import queue_comparison

    alone = sent(gradient_curves(registry, TEXT, 9, initialized=True, factors=True))
    worker, order = registry.jobs.thread, []
    real_pause = worker.pause

    def pause_with_a_reader_typing():
        if not order:  # the first pause: a reader's compare arrives now
            order.append(queue_comparison(registry, "Je mange une pomme.", ("rnn", "lstm")))
        real_pause()

    monkeypatch.setattr(worker, "pause", pause_with_a_reader_typing)
    paused = worker.load.paused
    together = sent(gradient_curves(registry, TEXT, 9, initialized=True, factors=True))
    assert together == alone
    assert worker.load.paused > paused  # the compare's turn ran inside the experiment's
    [queued] = order
    assert all(future.done() and future.exception() is None for _, future in queued)


class LateCancel(threading.Event):
    """Set from its `after`-th look on: a newer text arriving while the work runs."""

    def __init__(self, after: int):
        super().__init__()
        self.looks, self.after = 0, after

    def is_set(self) -> bool:
        self.looks += 1
        return self.looks >= self.after


def test_a_text_superseded_while_its_experiment_runs_stops_at_the_next_pause_and_is_charged_what_ran(registry):
    meter = Meter()
    with pytest.raises(Stopped):
        gradient_curves(registry, TEXT, 12, initialized=True, factors=True, cancel=LateCancel(3), meter=meter)
    stopped = meter.seconds
    assert stopped > 0  # the work that ran is the client's to pay for
    whole = Meter()
    gradient_curves(registry, TEXT, 12, initialized=True, factors=True, meter=whole)
    assert whole.seconds > stopped


def test_an_experiment_abandoned_before_its_turn_costs_nothing(registry):
    gone, meter = threading.Event(), Meter()
    gone.set()
    with pytest.raises(Abandoned):
        gradient_curves(registry, TEXT, 12, cancel=gone, meter=meter)
    assert meter.seconds == 0
