"""What the server and a stepper process say to each other (app/runtime/stepper_client.py is the server's
side, app/runtime/stepper_child.py the process's): its settings once, then these messages, each a
dataclass pickled over their socket pair."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from app.limits import Limits
from app.runtime.stepped_decoding import Batchable

# (registry, model name, item, cancel) -> the Batchable that steps it: how a process rebuilds a job
# from what was sent (a module-level function, so that it is sent by name)
JobOf = Callable[[Any, str, Any, threading.Event], Batchable]


@dataclass(frozen=True)
class StepperConfig:
    """What a stepper process loads and how it steps: the server's settings that concern it."""

    checkpoints: Path
    models: tuple[str, ...] | None
    device: str
    limits: Limits
    layout: str
    precision: str
    step: str
    pool_rows: int
    nice: int  # added to the process's Linux nice value
    job: JobOf


# the server -> a process

@dataclass(frozen=True)
class Join:
    """Step this sentence (`item` of `model`, asked by `client`); its answer comes back as Done(sid)."""

    sid: int
    model: str
    item: Any
    client: str


@dataclass(frozen=True)
class Drop:
    """Nobody wants sentence `sid` any more: drop it at its next step."""

    sid: int


@dataclass(frozen=True)
class Close:
    """End the process."""


ToStepper = Join | Drop | Close


# a process -> the server

@dataclass(frozen=True)
class Ready:
    """The models are loaded: sentences may come."""


@dataclass(frozen=True)
class Done:
    """Sentence `sid`'s answer, or the exception that ended it."""

    sid: int
    result: Any


@dataclass(frozen=True)
class Report:
    """The process's model thread since the last report: per client its oldest sentence's wait, and
    the steps it ran and the first-step waits (for /metrics)."""

    ages: dict[str, float]
    ran: list
    waits: list
