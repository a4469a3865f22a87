"""The settings of a "teach it a pair" run (models/teach.py), apart from the training code so that the
server's schemas can read them without loading torch."""

from __future__ import annotations

from dataclasses import dataclass

TEACHABLE = ("lstm-additive", "lstm-dot", "lstm", "rnn", "transformer")  # every shipped model fits the limits
REHEARSAL_PAIRS = 4  # training pairs mixed into every step when rehearsal is on


@dataclass(frozen=True)
class TeachConfig:
    """One run: fine-tune a private copy of `model` on (text -> target) for `steps` steps."""

    text: str  # the reader's French sentence, normalised
    target: str  # the English the reader wants, normalised
    model: str = "lstm-additive"
    steps: int = 30  # optimizer steps on the pair
    rehearsal: bool = False  # mix REHEARSAL_PAIRS training pairs into every step
    learning_rate: float = 1e-4  # plain Adam
    seed: int = 0  # which training pairs rehearsal draws


@dataclass(frozen=True)
class TeachLimits:
    """The bounds of one run a server accepts (GET /api/teach tells them)."""

    max_steps: int = 100
    max_target_chars: int = 200  # the target's length, after normalising
    seconds: float = 30.0  # a run's wall-clock cap, start-up included
