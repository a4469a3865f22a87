"""GET and POST /api/train as plain objects: the "train it yourself" experiment (models/live.py),
run in a process of its own beside the server, never on the model thread.

A run is a child process (`python -m models.live run SETTINGS`) at one torch thread and a higher
nice value, so translation keeps its cores, and killed if the server dies; its progress lines are
passed on to the client as they come. Each replica runs at most `slots` at once; another reader
waits in a line, first come first served, and is told its place and expected start as lines of
their own (TrainQueued) until a slot is handed to it: a slot given back goes to the head of the line
before anyone who asks after, the reader whose run just ended included. A client holds at most one
place, running or waiting, and the line is bounded (`line_limit`): past either, BusyError (429 with
Retry-After). Each run is capped in steps and seconds (checked before any
work) and in resident memory (the process is killed past `memory_mb`); it ends, process and all,
when its client leaves, and when its client stops reading: a write of its lines that waits longer than
`write_deadline_s` drops the answer (app/routes/live.py), else a reader that reads no more would keep
the slot, and the line behind it, for ever. The slot or the place is given back on paths that neither
a cancellation nor a garbage collection can skip or deadlock.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import math
import os
import statistics
import sys
import threading
import time
import weakref
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter, ValidationError

from app.config import REPO_ROOT
from app.runtime.errors import BusyError, InvalidOptionError
from app.schemas.live import ProcessEnd, Sweep, TrainContestant, TrainEnd, TrainInfo, TrainLine, TrainQueued
from models import live
from models.live_config import LiveLimits

SWEEP = Path("live") / "sweep.json"  # under the checkpoints folder: the reference table
NICE = 10  # added to the run's nice value: translation requests come first
LINE = TypeAdapter(TrainLine)
log = logging.getLogger("attention_lab")
POLL_S = 0.25  # how often the run's memory is read
START_SLACK_S = 30.0  # allowed beyond the contestants' seconds: importing torch, scoring, writing
LINE_LIMIT = 8  # readers waiting for a slot, per replica
MEASURED = 8  # recent runs whose durations give the expected start of those waiting
PLACE_EVERY_S = 5.0  # how often a waiting reader is told its place again, when it moved
Started = Callable[[], Awaitable[None]]  # awaited as a run's process is about to start


@dataclass(eq=False)
class Ticket:
    """A place in the line: `handed` is set once a slot is this ticket's."""

    client: str
    config: live.LiveConfig
    loop: asyncio.AbstractEventLoop  # the server's: a slot may be given back from any thread (a finalizer)
    handed: asyncio.Event = field(default_factory=asyncio.Event)
    lease: Lease | None = None
    started: Started | None = None


class LiveRuns:
    """The replica's training slots and how a run is started, watched and ended. What is particular
    to the training run (its command, cap, lines and last line) is in the methods a run of another
    kind overrides (app/services/teach.py: teaching a copy of a model one pair)."""

    what = "live training"  # the refusals begin with it

    def __init__(self, checkpoints: Path | None, slots: int = 1, memory_mb: int = 768,
                 limits: LiveLimits | None = None, line_limit: int = LINE_LIMIT,
                 write_deadline_s: float = 20.0):
        self.checkpoints = checkpoints
        self.slots = slots
        self.memory_mb = memory_mb
        self.write_deadline_s = write_deadline_s  # the longest a client may read nothing (app/config.py)
        self.limits = limits or LiveLimits()
        self.line_limit = line_limit
        self.running = 0
        self.ends_by = 0.0  # when the latest run ends at the latest (monotonic clock)
        self.started_at = 0.0  # when the latest run started (monotonic clock)
        self.waiting: deque[Ticket] = deque()
        self.holders: set[str] = set()  # clients with a run going or a place in the line
        self.durations: deque[float] = deque(maxlen=MEASURED)  # seconds of the latest whole runs
        self.lock = threading.Lock()  # the slots and the line; never taken in a finalizer (soon())

    def describe(self) -> TrainInfo:
        """What GET /api/train answers: tasks, contestants, defaults, limits and the sweep."""
        return TrainInfo(
            tasks=list(live.TASKS),
            contestants=[TrainContestant(name=n, attention=live.attention_of(n)) for n in live.CONTESTANTS],
            defaults=live.LiveConfig(), limits=self.limits, slots=self.slots, running=self.running,
            waiting=len(self.waiting), reference=self.reference())

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

    def command(self, config) -> list[str]:
        return command(config)

    def wall_cap(self, config) -> float:
        return wall_cap(config)

    def check_line(self, line: bytes) -> None:
        """ValidationError when a line of the process is outside the contract."""
        LINE.validate_json(line)

    async def spawn(self, config):
        """The run's process, started."""
        return await asyncio.create_subprocess_exec(
            *self.command(config), cwd=REPO_ROOT, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL,
            env={**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"})

    def end_line(self, peak_mb: float, exit: int | None, why: str | None) -> str:
        """The stream's last line: the process's own account, and why it was stopped if it was."""
        last = TrainEnd(process=ProcessEnd(peak_mb=round(peak_mb, 1), exit=exit), error=why)
        return last.model_dump_json(exclude_none=True) + "\n"

    def ended(self) -> None:
        """A run's process is gone (called on the event loop)."""

    def start(self, config: live.LiveConfig, client: str = "",
              started: Started | None = None) -> AsyncIterator[str]:
        """The run's NDJSON lines: at once when a slot is free and nobody waits, else after lines
        that tell the reader's place in the line. BusyError when `client` already holds a place, or
        the line is full. The slot or the place is given back when the lines end, or when nobody
        ever reads them. `started()` is awaited as the run's process is about to start (the client's
        share is charged then: a reader who leaves the line first pays nothing). Called on the
        server's event loop: a dropped stream's slot is given back on it."""
        with self.lock:
            return self._start(config, client, started)

    def _start(self, config: live.LiveConfig, client: str, started: Started | None) -> AsyncIterator[str]:
        if client in self.holders:
            raise BusyError(f"{self.what}: you already have a run going or waiting (one per reader)",
                            self.retry_after())
        if self.running < self.slots and not self.waiting:
            self.holders.add(client)
            lease = self._take(config, client)
            lines = self._lines(config, lease, started)
            # never iterated (the client left first): freed anyway
            weakref.finalize(lines, soon, asyncio.get_running_loop(), lease.release)
            return lines
        if len(self.waiting) >= self.line_limit:
            raise BusyError(f"{self.what}: every slot is taken ({self.slots} on this replica) and the line "
                            f"is full ({self.line_limit} waiting)", self.retry_after())
        self.holders.add(client)
        ticket = Ticket(client, config, asyncio.get_running_loop(), started=started)
        self.waiting.append(ticket)
        lines = self._queued(ticket)
        weakref.finalize(lines, soon, ticket.loop, self._leave, ticket)
        return lines

    def place(self, ticket: Ticket) -> tuple[int, int] | None:
        """The ticket's place (1: next) and the seconds until it is expected to start: what the
        running run has left of a typical run, then a typical run per round of slots ahead of it.
        None once it waits no more (handed a slot, or gone)."""
        with self.lock:
            if ticket not in self.waiting:
                return None
            place = self.waiting.index(ticket) + 1
        typical = self.typical_s(ticket.config)
        left = max(0.0, self.started_at + typical - time.monotonic())
        return place, math.ceil(left + (place - 1) // self.slots * typical)

    def typical_s(self, config: live.LiveConfig) -> float:
        """A run's expected duration: the median of the latest measured runs, or its cap before any."""
        return statistics.median(self.durations) if self.durations else self.wall_cap(config)

    def retry_after(self) -> int:
        """Seconds until the running run ends at the latest (its caps), at least 1."""
        return max(1, math.ceil(self.ends_by - time.monotonic()))

    def _take(self, config: live.LiveConfig, client: str) -> Lease:
        self.running += 1
        self.started_at = time.monotonic()
        self.ends_by = self.started_at + self.wall_cap(config)
        return Lease(self, client)

    def _give_back(self, client: str) -> None:
        """A run ended: its slot goes to the head of the line, or is free."""
        with self.lock:
            self.holders.discard(client)
            self.running -= 1
            if self.waiting:
                ticket = self.waiting.popleft()
                ticket.lease = self._take(ticket.config, ticket.client)
                ticket.loop.call_soon_threadsafe(ticket.handed.set)

    def _leave(self, ticket: Ticket) -> None:
        """A waiting reader left: its place, or the slot it was just handed, goes to the next."""
        with self.lock:
            if ticket in self.waiting:
                self.waiting.remove(ticket)
                self.holders.discard(ticket.client)
                return
        if ticket.lease is not None:
            ticket.lease.release()

    async def _queued(self, ticket: Ticket) -> AsyncIterator[str]:
        try:
            told = None
            # the line, not `handed`, says whether it still waits: a slot is handed under the lock,
            # `handed` is set later through the loop, and the timer may wake the reader in between
            while (place := self.place(ticket)) is not None:
                if told is None or place[0] != told[0]:
                    told = place
                    queued = TrainQueued(queued={"place": place[0], "starts_in": place[1]})
                    yield queued.model_dump_json() + "\n"
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(ticket.handed.wait(), PLACE_EVERY_S)
            if ticket.lease is None:  # it left the line without a slot: nothing to run
                return
            # closed with this stream, so a dropped reader's run ends now, not when it is collected
            async with contextlib.aclosing(self._lines(ticket.config, ticket.lease, ticket.started)) as lines:
                async for line in lines:
                    yield line
        finally:
            self._leave(ticket)

    async def _lines(self, config: live.LiveConfig, lease: Lease, started: Started | None = None
                     ) -> AsyncIterator[str]:
        try:
            if started is not None:
                await started()
        except BaseException:
            lease.release()
            raise
        try:
            process = await self.spawn(config)
        except BaseException:
            lease.release()
            raise
        peak = [0.0]
        began = time.monotonic()
        watch = asyncio.create_task(self._watch(process, self.wall_cap(config), peak))
        try:
            why = None
            while line := await process.stdout.readline():
                try:
                    self.check_line(line)
                except ValidationError as error:  # the process broke the contract: stop it there
                    log.error("%s: a line outside the contract: %s", self.what, error)
                    process.kill()
                    why = "the process wrote a line outside the contract"
                    break
                yield line.decode()
            await process.wait()
            why = why or (watch.result() if watch.done() else None)
            if why is None and process.returncode != 0:
                why = f"the process failed (exit {process.returncode})"
            if why is None:
                self.durations.append(time.monotonic() - began)
            yield self.end_line(peak[0], process.returncode, why)
        finally:  # also when the client leaves: the process goes with it
            watch.cancel()
            try:
                await end(process)  # the kill is sent before its first await: a cancel here leaves no run
            finally:
                lease.release()  # even when that wait is cancelled (a second cancel, a shutdown)
                self.ended()

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


def soon(loop: asyncio.AbstractEventLoop, callback, *args) -> None:
    """Run `callback(*args)` on `loop` soon: what a finalizer does. A finalizer may run on any thread
    inside any code, `start()` holding the slots' lock on this very thread included, so it takes no
    lock itself (call_soon_threadsafe takes none)."""
    with contextlib.suppress(RuntimeError):  # the loop is closed: the server, and its slots, are gone
        loop.call_soon_threadsafe(callback, *args)


class Lease:
    """One taken slot, given back once whatever happens."""

    def __init__(self, runs: LiveRuns, client: str):
        self.runs = runs
        self.client = client
        self.held = True

    def release(self) -> None:
        if self.held:
            self.held = False
            self.runs._give_back(self.client)


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
