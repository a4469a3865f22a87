"""GET and POST /api/teach as plain objects: teaching a private copy of a model one pair
(models/teach.py), in a process of its own beside the server, never on the model thread and never on
a served model's weights.

A run goes the way of a live training run (app/services/live.py, whose machinery this reuses): a
child process at `threads` torch threads (two by default) and a higher nice value that dies with the
server, a slot per replica and a line behind it, one place per client, a memory cap and a time cap,
the process ended when its client leaves or stops reading. Its slots are its own, not the
training's: a run takes seconds and a training run up to minutes, so a reader who teaches would
otherwise wait minutes behind a training run for a few seconds of work; both processes are niced, so
translation comes first.

A run's process imports torch, which takes two seconds or more of this machine's time, more than
the run's own steps on the default model. So one process is started ahead (the spare): it imports
and reads what every run needs (the tokenizer, the held-out pairs, the default model), then waits for
a run's settings on its stdin; a run takes it, and another is started once that run is over. The
spare is started when a reader opens the experiment (GET /api/teach), and ends by itself when no
run came within IDLE_S, so an idle server keeps no process for it.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
import json
import os
import sys
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter

from app.config import REPO_ROOT
from app.runtime.errors import InvalidOptionError
from app.runtime.text import check_text
from app.schemas.live import ProcessEnd
from app.schemas.teach import TeachDone, TeachInfo, TeachLine
from app.services.live import LINE_LIMIT, NICE, LiveRuns, end
from models.data import normalize
from models.teach_config import REHEARSAL_PAIRS, TEACHABLE, TeachConfig, TeachLimits

LINE = TypeAdapter(TeachLine)
IDLE_S = 300.0  # a spare process nobody used ends after this
PAIRS = Path("teach") / "pairs.json"  # under the checkpoints folder (models/teach.py)


class TeachRuns(LiveRuns):
    """The replica's teaching slots, its line, and the spare process."""

    what = "teaching"

    def __init__(self, checkpoints: Path | None, slots: int = 1, memory_mb: int = 768,
                 limits: TeachLimits | None = None, line_limit: int = LINE_LIMIT,
                 write_deadline_s: float = 20.0, max_chars: int = 500, spare: bool = True, threads: int = 2):
        super().__init__(checkpoints, slots, memory_mb, None, line_limit, write_deadline_s)
        self.limits = limits or TeachLimits()
        self.max_chars = max_chars
        self.keep_spare = spare
        self.threads = threads  # the run's torch threads
        self.spare = None  # a process started ahead, waiting for a run's settings
        self.warming: asyncio.Task | None = None

    def describe(self, models: list[str]) -> TeachInfo:
        return TeachInfo(models=self.teachable(models), defaults=TeachConfig(text="", target=""),
                         limits=self.limits, rehearsal_pairs=REHEARSAL_PAIRS, held_out=self.held_out(),
                         slots=self.slots, running=self.running, waiting=len(self.waiting))

    @functools.cache  # noqa: B019 (one object per app, kept as long as it)
    def held_out(self) -> int:
        """The held-out pairs every run is scored on (0: none shipped, no run can start)."""
        with contextlib.suppress(OSError, ValueError, KeyError, TypeError):
            return len(json.loads((self.checkpoints / PAIRS).read_text())["held_out"])
        return 0

    @staticmethod
    def teachable(models: list[str]) -> list[str]:
        return [m for m in models if m in TEACHABLE]

    def settings(self, fields: dict[str, Any], models: list[str]) -> TeachConfig:
        """The run asked for: the defaults with `fields` over them, every limit checked (422 naming
        the field: InvalidTextError for the text, InvalidOptionError for the others)."""
        fields = {k: v for k, v in fields.items() if v is not None}
        text = check_text(fields["text"], self.max_chars)
        target = self.target(fields["target"])
        model = fields.get("model", TeachConfig.model)
        teachable = self.teachable(models)
        if model not in teachable:
            valid = ", ".join(teachable) or "none"
            raise InvalidOptionError("model", f"unknown model {model!r}; valid: {valid}")
        steps = fields.get("steps", TeachConfig.steps)
        if not 1 <= steps <= self.limits.max_steps:
            raise InvalidOptionError("steps", f"must be 1 to {self.limits.max_steps}, got {steps}",
                                     "less_than_equal", {"le": self.limits.max_steps})
        return TeachConfig(text=text, target=target, model=model, steps=steps,
                           rehearsal=fields.get("rehearsal", TeachConfig.rehearsal))

    def target(self, value: str) -> str:
        most = self.limits.max_target_chars
        trimmed = value.strip()
        normal = normalize(trimmed)
        if not normal:
            raise InvalidOptionError("target", "must hold some English: it is empty once white space and "
                                               "control characters are removed", "string_too_short",
                                     {"min_length": 1})
        if len(trimmed) > most or len(normal) > most:
            got = max(len(trimmed), len(normal))
            raise InvalidOptionError("target", f"must be at most {most} characters, got {got}",
                                     "string_too_long", {"max_length": most})
        return normal

    def command(self, config: TeachConfig | None = None) -> list[str]:
        """The process's command line; its settings come on its stdin (so a spare can start first)."""
        return [sys.executable, "-m", "models.teach", "run", "--checkpoints", str(self.checkpoints), "--nice",
                str(NICE), "--parent", str(os.getpid()), "--idle", str(IDLE_S), "--threads", str(self.threads)]

    def wall_cap(self, config) -> float:
        return self.limits.seconds

    def check_line(self, line: bytes) -> None:
        LINE.validate_json(line)

    def end_line(self, peak_mb: float, exit: int | None, why: str | None) -> str:
        last = TeachDone(done=True, process=ProcessEnd(peak_mb=round(peak_mb, 1), exit=exit), error=why)
        return last.model_dump_json(exclude_none=True) + "\n"

    async def start_process(self):
        return await asyncio.create_subprocess_exec(
            *self.command(), cwd=REPO_ROOT, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL,
            env={**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"})

    async def spawn(self, config: TeachConfig):
        """The spare, if one waits, else a new process; told the run's settings."""
        if self.warming is not None:
            with contextlib.suppress(Exception):
                await asyncio.shield(self.warming)  # being started: it is nearer ready than a new one
        process, self.spare = self.spare, None
        if process is None or process.returncode is not None:
            process = await self.start_process()
        process.stdin.write(json.dumps(dataclasses.asdict(config)).encode() + b"\n")
        with contextlib.suppress(ConnectionError):  # it died already: its exit says so
            await process.stdin.drain()
        process.stdin.close()
        return process

    def warm(self) -> None:
        """Have a spare process waiting (started now if none is); on the event loop."""
        if not self.keep_spare or self.checkpoints is None or self.warming is not None:
            return
        if self.spare is not None and self.spare.returncode is None:
            return
        self.warming = asyncio.get_running_loop().create_task(self._warm())

    async def _warm(self) -> None:
        try:
            self.spare = await self.start_process()
        finally:
            self.warming = None

    def ended(self) -> None:
        with contextlib.suppress(RuntimeError):  # no running loop: the server is going
            self.warm()

    async def close(self) -> None:
        """The spare ended and reaped (the server stops)."""
        self.keep_spare = False
        if self.warming is not None:
            with contextlib.suppress(Exception):
                await self.warming
        spare, self.spare = self.spare, None
        if spare is not None:
            await end(spare)
