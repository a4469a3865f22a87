"""app/services/teach.py without HTTP: a run's settings checked and normalised, what GET /api/teach
says, the run's command and its last line."""

from __future__ import annotations

import json

import pytest

from app.runtime.errors import InvalidOptionError, InvalidTextError
from app.services.teach import NICE, TeachRuns
from models.teach_config import TeachConfig, TeachLimits

MODELS = ["rnn", "lstm-additive", "transformer", "not-taught"]


@pytest.fixture
def runs(tiny_checkpoints) -> TeachRuns:
    return TeachRuns(tiny_checkpoints, limits=TeachLimits(max_steps=50, max_target_chars=20), max_chars=30,
                     spare=False)


def test_the_settings_are_the_defaults_under_what_was_asked_normalised(runs):
    config = runs.settings({"text": "  Je  mange\u00a0du pain. ", "target": "I\u2019m eating bread.",
                            "steps": None}, MODELS)
    assert config == TeachConfig(text="Je mange du pain.", target="I'm eating bread.")
    assert runs.settings({"text": "Il pleut.", "target": "It rains.", "model": "rnn", "steps": 50,
                          "rehearsal": True}, MODELS).rehearsal


@pytest.mark.parametrize(("fields", "error", "field"), [
    ({"target": "\u200b "}, InvalidOptionError, "target"),
    ({"target": "x" * 21}, InvalidOptionError, "target"),
    ({"model": "not-taught"}, InvalidOptionError, "model"),
    ({"model": "lstm-dot"}, InvalidOptionError, "model"),  # teachable, but not loaded here
    ({"steps": 51}, InvalidOptionError, "steps"),
    ({"text": "x" * 31}, InvalidTextError, "text"),
])
def test_each_limit_is_refused_naming_its_field(runs, fields, error, field):
    with pytest.raises(error) as refused:
        runs.settings({"text": "Il pleut.", "target": "It rains.", **fields}, MODELS)
    assert getattr(refused.value, "field", "text") == field


def test_the_experiment_says_its_models_limits_and_held_out_pairs(runs):
    info = runs.describe(MODELS)
    assert info.models == ["rnn", "lstm-additive", "transformer"] and info.limits.max_steps == 50
    assert info.held_out == 3 and info.rehearsal_pairs == 4 and info.slots == 1


def test_the_process_steps_back_dies_with_the_server_and_its_last_line_says_done(runs):
    command = runs.command()
    assert command[1:4] == ["-m", "models.teach", "run"] and command[command.index("--nice") + 1] == str(NICE)
    assert "--parent" in command and runs.wall_cap(None) == runs.limits.seconds
    last = json.loads(runs.end_line(301.26, 0, None))
    assert last == {"done": True, "process": {"peak_mb": 301.3, "exit": 0}}
    assert json.loads(runs.end_line(900, -9, "stopped: memory"))["error"] == "stopped: memory"
