"""Readers' stepped decoding in processes of their own (Settings.step_processes): one stepping lane
per process, so that no lane waits for the interpreter lock while the event loop or another lane
holds it.

Why: a lane's decoding step is a few dozen PyTorch calls, each of which gives the interpreter lock
up and takes it back. In one process the event loop (parsing requests, writing answers) and the other
lane hold the lock between those calls, and a lane that wants it back waits up to the interpreter's
switch interval (5 ms) at every call: under load a step took twice its own CPU time, with cores idle
(docs/SERVER.md, "Stepping processes", has the measurements). A process has a lock of its own.

Each stepper process loads the models (the same checkpoints and serving settings, no result cache)
and runs the same stepped decoding as the model thread (stepped_decoding.SteppedDecoding) on a model thread
of one lane, fed through a pipe. A model's sentences go to its home process (models are shared out
over the processes by size, so that every process has a similar share of the work), or, while
fewer models have work than there are processes, to whichever of them has fewer of that model's
sentences, so one model typed into by many readers is stepped on every core. Identical work (the
same model and key) is sent once for every reader asking. A sentence nobody wants any more (every
reader's Future cancelled) is dropped in its process at its next step. A process reports what its
model thread did (batch sizes, waits) and how long its oldest sentence has waited, for /metrics and
admission. Until a process is ready, its sentences are stepped on the model thread as before
(`step_together` answers None). A process that dies has its sentences in flight run again from the
start in another ready process, or on the model thread, so no reader sees it; it is reaped and its
line closed, and another takes its place RESTART_S later.

This module is the server's side; the process is app/runtime/stepper_child.py, and what the two say
to each other (dataclasses over a socket pair) is app/runtime/stepper_messages.py.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Hashable
from concurrent.futures import Future
from dataclasses import dataclass, field
from functools import partial
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from app.runtime.counters import Dropped, Load
from app.runtime.errors import Abandoned
from app.runtime.scheduler import homes, route
from app.runtime.stepped_decoding import Batchable, settle
from app.runtime.stepper_messages import Close, Done, Drop, Join, Ready, Report, StepperConfig, ToStepper

log = logging.getLogger("attention_lab")
Local = Callable[[Batchable, threading.Event | None], Future]  # a sentence stepped in this process
RESTART_S = 2.0  # how long after a process ends another takes its place
FAILED_STARTS = 3  # processes in a row that end before they are ready: no more are started

@dataclass(eq=False)
class _Sent:
    """One sentence sent to a process: the readers' Futures waiting for it, and what it is (to be run
    again elsewhere if its process ends)."""

    sid: int
    process: int
    spec: Batchable
    cancel: threading.Event | None
    futures: list[Future] = field(default_factory=list)

    @property
    def group(self) -> Hashable:
        return self.spec.group

    @property
    def key(self) -> Hashable:
        return self.spec.key


class Steppers:
    """The stepper processes of a server, and the sentences sent to them (see the module's docstring)."""

    def __init__(self, config: StepperConfig, processes: int, load: Load, dropped: Dropped,
                 sizes: dict[str, int] | None = None, local: Local | None = None):
        """processes: how many; load, dropped: the model thread's figures, which the processes' are
        added to; sizes: model name -> parameters, what the models are shared out by (their home
        process); local: steps a sentence in this process (the model thread's `step_together`), for
        the sentences of a process that ended when no other is ready."""
        self.load, self.dropped = load, dropped
        self.local = local
        self.homes = homes(sizes or {}, processes)
        self._lock = threading.Lock()
        self._sids = itertools.count()
        self._sent: dict[int, _Sent] = {}
        self._by_key: dict[tuple[Hashable, Hashable], _Sent] = {}
        self._live: dict[Hashable, list[int]] = {}  # group -> per process, its sentences sent and not settled
        # per process: per client, its oldest sentence's age, and when that was reported
        self._waited: list[tuple[dict[str, float], float]] = [({}, 0.0)] * processes
        self._closed = False
        self._closing = threading.Event()
        self._config = config
        self._processes: list[subprocess.Popen] = []
        self._conns: list[Connection] = []
        self._send_locks = [threading.Lock() for _ in range(processes)]
        self._ready = [False] * processes
        # per process: set once it was first ready, or no more are started in its place
        self._started = [threading.Event() for _ in range(processes)]
        for i in range(processes):
            process, conn = _start(config)
            self._processes.append(process)
            self._conns.append(conn)
            threading.Thread(target=self._supervise, args=(i,), name=f"stepper-{i}-answers",
                             daemon=True).start()

    @property
    def processes(self) -> int:
        """How many processes this server runs (each restarted in its place if it ends)."""
        return len(self._ready)

    def ready(self) -> int:
        """How many processes take sentences now."""
        return sum(self._ready)

    def started(self, timeout: float) -> bool:
        """Wait at most `timeout` seconds for every process to have been ready once (or to have been
        given up on); whether they all got there in time."""
        end = time.monotonic() + timeout
        return all(event.wait(max(0.0, end - time.monotonic())) for event in self._started)

    def step_together(self, spec: Batchable, cancel: threading.Event | None = None) -> Future | None:
        """Send `spec` (its model and item) to a process to be stepped with other readers' sentences:
        its Future, settled as the model thread's `step_together` settles it; None when no process
        is ready (the caller steps it in process)."""
        if cancel is not None and cancel.is_set():
            return None
        future: Future = Future()
        with self._lock:
            if self._closed:
                return None
            shared = self._by_key.get((spec.group, spec.key))
            if shared is not None and any(not f.done() for f in shared.futures):
                shared.futures.append(future)
                future.add_done_callback(partial(self._dropped, shared.sid))
                return future
            process = self._choose(spec.group)
            if process is None:
                return None
            sent = _Sent(next(self._sids), process, spec, cancel, [future])
            self._sent[sent.sid] = sent
            self._by_key[spec.group, spec.key] = sent
            self._live.setdefault(spec.group, [0] * len(self._ready))[process] += 1
        if not self._send(process, Join(sent.sid, spec.model, spec.item, spec.client)):
            with self._lock:
                self._forget(sent)
            return None
        future.add_done_callback(partial(self._dropped, sent.sid))
        return future

    def ages(self) -> dict[str, float]:
        """Per client, how long its oldest sentence not yet stepped in any process has waited, as
        last reported plus the time since."""
        now = time.perf_counter()
        oldest: dict[str, float] = {}
        for ages, when in self._waited:
            for client, age in ages.items():
                oldest[client] = max(age + now - when, oldest.get(client, 0.0))
        return oldest

    def close(self) -> None:
        with self._lock:
            self._closed = True
            self._closing.set()
            for event in self._started:  # nobody waits for a start any more
                event.set()
            sent, self._sent = list(self._sent.values()), {}
            self._by_key.clear()
        for i in range(len(self._processes)):
            self._send(i, Close())
        for process in self._processes:
            try:
                process.wait(5)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        for conn in self._conns:
            conn.close()
        for one in sent:
            for future in one.futures:
                future.cancel()

    def _choose(self, group: Hashable) -> int | None:
        """Under the lock: the process a new sentence of `group` goes to (see the module's docstring)."""
        ready = [i for i, ok in enumerate(self._ready) if ok]
        if not ready:
            return None
        home = self.homes.get(group[-1] if isinstance(group, tuple) else group, hash(group) % len(self._ready))
        return route(group, home, self._live, ready)

    def _send(self, process: int, message: ToStepper) -> bool:
        try:
            with self._send_locks[process]:
                self._conns[process].send(message)
            return True
        except (OSError, ValueError, EOFError):  # the process has gone
            self._ready[process] = False
            return False

    def _dropped(self, sid: int, future: Future) -> None:
        """A reader's Future is done: if it was cancelled and no reader waits for sentence `sid` any
        more, the process drops it at its next step. (The callback holds the number, not the _Sent:
        a Future keeps its callbacks after it is done, and the _Sent holds the Future, so that cycle
        would keep every answer alive until a full collection, which then stalled the event loop.)"""
        if not future.cancelled():
            return
        with self._lock:
            sent = self._sent.get(sid)
            if sent is None or any(not f.done() for f in sent.futures):
                return
            self._forget(sent)
        self._send(sent.process, Drop(sid))

    def _forget(self, sent: _Sent) -> None:
        if self._sent.pop(sent.sid, None) is not None:
            self._live[sent.group][sent.process] -= 1
        if self._by_key.get((sent.group, sent.key)) is sent:
            del self._by_key[sent.group, sent.key]

    def _supervise(self, process: int) -> None:
        """Read process `process`'s messages until it ends; then, unless the server is closing, start
        another in its place after RESTART_S, until FAILED_STARTS in a row end before they are ready."""
        failed = 0
        while True:
            ready = self._receive(process)
            failed = 0 if ready else failed + 1
            if failed >= FAILED_STARTS:
                self._started[process].set()
                log.error("stepper %d: %d processes in a row ended before they were ready; its models are "
                          "stepped in process from now on", process, failed)
                return
            if self._closing.wait(RESTART_S):
                return
            with self._lock:
                if self._closed:
                    return
                _end(self._processes[process], self._conns[process])  # reaped, its line closed
                self._processes[process], self._conns[process] = _start(self._config)

    def _receive(self, process: int) -> bool:
        """The process's messages, until it ends: its answers, its figures, that it is ready. Whether
        it was ever ready."""
        conn = self._conns[process]
        ready = False
        while True:
            try:
                message = conn.recv()
            except (EOFError, OSError):
                break
            except Exception:  # an answer that could not be read: that reader's error, the others go on
                log.exception("stepper %d: an unreadable message", process)
                continue
            if isinstance(message, Done):
                self._answered(message.sid, message.result)
            elif isinstance(message, Report):
                self._report(process, message.ages, message.ran, message.waits)
            elif isinstance(message, Ready):
                self._ready[process] = ready = True
                self._started[process].set()
                log.info("stepper %d ready (pid %d)", process, self._processes[process].pid)
        self._ready[process] = False
        self._waited[process] = ({}, 0.0)
        with self._lock:
            lost = [sent for sent in self._sent.values() if sent.process == process]
            for sent in lost:
                self._forget(sent)
            closed = self._closed
        if not closed:
            with contextlib.suppress(subprocess.TimeoutExpired):
                self._processes[process].wait(1)
            log.error("stepper %d ended (exit %s); its models are stepped in process until another starts",
                      process, self._processes[process].poll())
        for sent in lost:
            self._again(sent)
        return ready

    def _again(self, sent: _Sent) -> None:
        """A sentence whose process ended before its answer: run again from the start in another
        ready process, else on the model thread; its readers get that answer (RuntimeError only
        where neither can take it)."""
        waiting = [future for future in sent.futures if not future.done()]
        if not waiting:
            return
        again = self.step_together(sent.spec, sent.cancel)
        if again is None and self.local is not None:
            with contextlib.suppress(RuntimeError):  # the model thread is closed: the server is going
                again = self.local(sent.spec, sent.cancel)
        if again is None:
            settle(waiting, RuntimeError("the stepping process ended"))
            return
        again.add_done_callback(partial(_relay, waiting))

    def _answered(self, sid: int, result: Any) -> None:
        if isinstance(result, BaseException):
            self.dropped.count(result)  # work nobody wanted any more, as the model thread counts it
        with self._lock:
            sent = self._sent.get(sid)
            if sent is not None:
                self._forget(sent)
        if sent is not None:
            settle(sent.futures, result)

    def _report(self, process: int, ages: dict[str, float], ran: list, waits: list) -> None:
        self._waited[process] = (ages, time.perf_counter())
        for model, together in ran:
            self.load.ran(together, model)
        for model, seconds in waits:
            self.load.waited(model, seconds)


def _relay(futures: list[Future], done: Future) -> None:
    """`done`'s outcome handed to `futures` (a cancelled one as Abandoned: nobody wanted it)."""
    if done.cancelled():
        settle(futures, Abandoned())
    else:
        settle(futures, done.exception() or done.result())


def _end(process: subprocess.Popen, conn: Connection) -> None:
    """A process that has ended, or is made to: its line closed, killed if it still runs, reaped."""
    conn.close()
    if process.poll() is None:
        process.kill()
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(5)


def _start(config: StepperConfig) -> tuple[subprocess.Popen, Connection]:
    """A stepper process (`python -m app.runtime.stepper_child FD`), sent its settings over a socket pair
    that stays its only line to the server: when the server goes, the process reads the end of it and
    ends too. A new interpreter, not a fork: the server has threads, and a forked child may inherit a
    lock another thread held."""
    ours, theirs = socket.socketpair()
    # the folder this `app` package is in first on its path, however the server was started
    home = str(Path(__file__).resolve().parents[2])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (home, os.environ.get("PYTHONPATH")) if p)}
    with theirs:
        process = subprocess.Popen([sys.executable, "-m", "app.runtime.stepper_child", str(theirs.fileno())],
                                   pass_fds=[theirs.fileno()], stdin=subprocess.DEVNULL, env=env)
    conn = Connection(ours.detach())
    conn.send(config)
    return process, conn

