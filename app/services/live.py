"""GET and POST /api/train as plain objects: the "train it yourself" experiment (models/live.py),
run in a process of its own beside the server, never on the model thread.

A run is a child process (`python -m models.live run SETTINGS`) at one torch thread and a higher
nice value, so translation keeps its cores, and killed if the server dies; its progress lines are
passed on to the client as they come. Each replica runs at most `slots` at once (another asks:
BusyError, 429 with Retry-After); each run is capped in steps and seconds (checked before any
work) and in resident memory (the process is killed past `memory_mb`); it ends, process and all,
when its client leaves.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import math
import os
import sys
import time
import weakref
from collections.abc import AsyncIterator
from dataclasses import asdict
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter, ValidationError

from app.config import REPO_ROOT
from app.runtime.errors import BusyError, InvalidOptionError
from app.schemas import ProcessEnd, Sweep, TrainContestant, TrainEnd, TrainInfo, TrainLine
from models import live
from models.live_config import LiveLimits

SWEEP = Path("live") / "sweep.json"  # under the checkpoints folder: the reference table
NICE = 10  # added to the run's nice value: translation requests come first
LINE = TypeAdapter(TrainLine)
log = logging.getLogger("attention_lab")
POLL_S = 0.25  # how often the run's memory is read
START_SLACK_S = 30.0  # allowed beyond the contestants' seconds: importing torch, scoring, writing


class LiveRuns:
    """The replica's training slots and how a run is started, watched and ended."""

    def __init__(self, checkpoints: Path | None, slots: int = 1, memory_mb: int = 768,
                 limits: LiveLimits | None = None):
        self.checkpoints = checkpoints
        self.slots = slots
        self.memory_mb = memory_mb
        self.limits = limits or LiveLimits()
        self.running = 0
        self.ends_by = 0.0  # when the latest run ends at the latest (monotonic clock)

    def describe(self) -> TrainInfo:
        """What GET /api/train answers: tasks, contestants, defaults, limits and the sweep."""
        return TrainInfo(
            tasks=list(live.TASKS),
            contestants=[TrainContestant(name=n, attention=live.attention_of(n)) for n in live.CONTESTANTS],
            defaults=live.LiveConfig(), limits=self.limits, slots=self.slots, running=self.running,
            reference=self.reference())

    def reference(self) -> Sweep | None:
        """The shipped sweep (final accuracy against length at the default budget), if any."""
        if self.checkpoints is None:
            return None
        path = self.checkpoints / SWEEP
        with contextlib.suppress(OSError, ValueError):  # pydantic's ValidationError is a ValueError
            return Sweep.model_validate_json(path.read_text())
        return None

    def settings(self, fields: dict[str, Any]) -> live.LiveConfig:
        """The run asked for: the defaults with `fields` over them, every limit checked (422)."""
        fields = {k: v for k, v in fields.items() if v is not None}
        if "contestants" in fields:
            fields["contestants"] = tuple(fields["contestants"])
            if len(set(fields["contestants"])) != len(fields["contestants"]):
                raise InvalidOptionError("contestants", "each contestant at most once")
        config = live.LiveConfig(**fields)
        lim, c = self.limits, config
        if not lim.min_length <= c.length <= lim.max_length:
            raise InvalidOptionError("length", f"must be {lim.min_length} to {lim.max_length}, got {c.length}")
        if not 1 <= c.steps <= lim.max_steps:
            raise InvalidOptionError("steps", f"must be 1 to {lim.max_steps}, got {c.steps}")
        if not 0 < c.seconds <= lim.max_seconds:
            raise InvalidOptionError("seconds", f"must be over 0, at most {lim.max_seconds}; got {c.seconds}")
        if len(c.contestants) > lim.max_contestants:
            raise InvalidOptionError("contestants", f"at most {lim.max_contestants}, got {len(c.contestants)}")
        if not 0 <= config.seed <= lim.max_seed:
            raise InvalidOptionError("seed", f"must be 0 to {lim.max_seed}, got {config.seed}")
        return config

    def start(self, config: live.LiveConfig) -> AsyncIterator[str]:
        """Take a slot (BusyError when none is free) and return the run's NDJSON lines; the slot is
        given back when the lines end, or when nobody ever reads them."""
        if self.running >= self.slots:
            taken = f"every live training slot is taken ({self.slots} on this replica)"
            raise BusyError(taken, self.retry_after())
        self.running += 1
        self.ends_by = time.monotonic() + wall_cap(config)
        lease = Lease(self)
        lines = self._lines(config, lease)
        weakref.finalize(lines, lease.release)  # never iterated (the client left first): freed anyway
        return lines

    def retry_after(self) -> int:
        """Seconds until the running run ends at the latest (its caps), at least 1."""
        return max(1, math.ceil(self.ends_by - time.monotonic()))

    async def _lines(self, config: live.LiveConfig, lease: Lease) -> AsyncIterator[str]:
        process = await asyncio.create_subprocess_exec(
            *command(config), cwd=REPO_ROOT, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL,
            env={**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"})
        peak = [0.0]
        watch = asyncio.create_task(self._watch(process, wall_cap(config), peak))
        try:
            why = None
            while line := await process.stdout.readline():
                try:
                    LINE.validate_json(line)
                except ValidationError as error:  # the process broke the contract: stop it there
                    log.error("train: a line outside the contract: %s", error)
                    process.kill()
                    why = "the training process wrote a line outside the contract"
                    break
                yield line.decode()
            await process.wait()
            why = why or (watch.result() if watch.done() else None)
            if why is None and process.returncode != 0:
                why = f"the training process failed (exit {process.returncode})"
            last = TrainEnd(process=ProcessEnd(peak_mb=round(peak[0], 1), exit=process.returncode), error=why)
            yield last.model_dump_json(exclude_none=True) + "\n"
        finally:  # also when the client leaves: the process goes with it
            watch.cancel()
            await end(process)
            lease.release()

    async def _watch(self, process, deadline_s: float, peak: list[float]) -> str | None:
        """Kill the run past its memory or time cap; the reason, or None while it keeps within both.
        `peak[0]`: the largest resident memory seen, in MB."""
        began = time.monotonic()
        while process.returncode is None:
            rss = resident_mb(process.pid)
            peak[0] = max(peak[0], rss or 0.0)
            if rss is not None and rss > self.memory_mb:
                process.kill()
                return f"stopped: the run used {rss:.0f} MB, above this server's {self.memory_mb} MB"
            if time.monotonic() - began > deadline_s:
                process.kill()
                return f"stopped: the run took longer than {deadline_s:.0f} s"
            await asyncio.sleep(POLL_S)
        return None


def command(config: live.LiveConfig) -> list[str]:
    """The run's command line. The child steps back (--nice) and asks to die with this server
    (--parent) itself: code run between fork and exec (a preexec_fn) may deadlock the child of a
    process with threads, as a server is."""
    return [sys.executable, "-m", "models.live", "run", json.dumps(asdict(config)), "--nice", str(NICE),
            "--parent", str(os.getpid())]


def wall_cap(config: live.LiveConfig) -> float:
    """The longest a run may take, in seconds: every contestant's seconds guard, and the slack."""
    return len(config.contestants) * config.seconds + START_SLACK_S


class Lease:
    """One taken slot, given back once whatever happens."""

    def __init__(self, runs: LiveRuns):
        self.runs = runs
        self.held = True

    def release(self) -> None:
        if self.held:
            self.held = False
            self.runs.running -= 1


async def end(process) -> None:
    """The process gone: killed if it still runs, and reaped."""
    if process.returncode is None:
        with contextlib.suppress(ProcessLookupError):
            process.kill()
    with contextlib.suppress(ProcessLookupError):
        await process.wait()


def resident_mb(pid: int) -> float | None:
    """The process's resident memory in MB (Linux /proc), None where it cannot be read."""
    with contextlib.suppress(OSError, ValueError):
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return None
