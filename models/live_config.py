"""The settings of a "train it yourself" run (models/live.py), apart from the training code so that
the server's schemas can read them without loading torch."""

from __future__ import annotations

from dataclasses import dataclass

TASKS = ("reverse", "copy")
CONTESTANTS = ("lstm", "lstm-additive", "lstm-dot", "rnn", "transformer")


@dataclass(frozen=True)
class LiveConfig:
    """One run's settings. The defaults are chosen from `sweep` (checkpoints/live/sweep.json)."""

    task: str = "copy"  # "copy" or "reverse"
    length: int = 12  # symbols per sequence
    contestants: tuple[str, ...] = ("lstm", "lstm-additive")
    steps: int = 800  # optimizer steps per contestant: the budget
    seconds: float = 60.0  # per contestant: a guard for slow machines, not the budget
    seed: int = 0
    alphabet: int = 10  # distinct symbols
    width: int = 64  # recurrent state (or d_model) width
    batch: int = 64
    learning_rate: float = 3e-3
    held_out: int = 500  # sequences scored for accuracy

    def __post_init__(self) -> None:
        if self.task not in TASKS:
            raise ValueError(f"task must be one of {TASKS}, got {self.task!r}")
        unknown = [c for c in self.contestants if c not in CONTESTANTS]
        if unknown or not self.contestants or len(set(self.contestants)) != len(self.contestants):
            raise ValueError(f"contestants must be distinct names from {CONTESTANTS}, got {self.contestants}")


@dataclass(frozen=True)
class LiveLimits:
    """The bounds of one run a server accepts (GET /api/train tells them)."""

    min_length: int = 4
    max_length: int = 40
    max_steps: int = 3000  # per contestant
    max_seconds: float = 60.0  # per contestant
    max_contestants: int = len(CONTESTANTS)
    max_seed: int = 2**31 - 1
