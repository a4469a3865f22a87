"""One thread runs all model work: loading the checkpoints and every forward and backward pass.

Why not the request threads themselves: PyTorch's CPU kernels parallelise through OpenMP, and
every thread that runs a parallel op gets a team of helper threads of its own. Once a second
thread has a team, the idle helpers of one fight the busy ones of the other for the cores, and a
request from a request thread takes several times as long as from a thread that alone owns a team
(docs/SERVER.md, "One model thread"). With a single model thread a request can use every core
(cores.py decides how many), requests never share model state, and the answers are the serial
ones by construction. Requests queue for it, so cached answers are served before they reach it
(see Jobs.result, app/runtime/jobs.py), and work whose client has hung up is skipped (`cancel`).

One exception, `run_together`: a batch of independent read-only jobs (POST /api/compare's five
models) runs on every core at once, one job per core with one intra-op thread each, the lanes
taking the next job as they free. A decoder step is mostly one-row products and small ops that one
thread runs almost as fast as two, so two models side by side finish the batch sooner than each
split over both cores in turn (bench/floor.py's compare / alone, with and without lanes). The
other lanes start only once the model thread has taken the batch, so no other work is ever running
beside them, and the batch gives the model thread back only when every lane is done. Unlike a job
split over both cores (cores.py), a batch keeps its lanes while other programs want the CPU: a lane
has one thread, so when the browser preempts it only that lane's model waits, not every thread of
a split operation: the page typing into the same cores (bench/bench_page.py) updates sooner with
the lanes kept than with the batch sent to one lane.

Interactive work first. Jobs queue by priority (INTERACTIVE: typing's compares; ORDINARY; then
EXPERIMENT: chapter experiments that take seconds, such as chapter 3's gradients), first come first
served within one. A job that has started is not interrupted by the operating system (a second
thread running models beside it is what the paragraphs above rule out); instead a long job calls
`pause()` between its steps, and every queued job more urgent than it runs there, on this same
thread, before the long job goes on. So a compare queued behind a 5-second experiment waits for one
step (a power iteration, a model's curve: tens of milliseconds), not for the experiment. The paused
job's state stays on its stack untouched, and the jobs run in between only read the loaded models,
so every answer is the one it would be without pausing (tests/app/runtime/test_worker.py).
"""

from __future__ import annotations

import contextlib
import heapq
import itertools
import os
import sys
import threading
import time
from collections import Counter, deque
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor, wait
from typing import TypeVar

import torch

from app.runtime.cores import CoreShare
from models.decoding import Stopped
from models.serving.threads import intra_op, set_intra_op

T = TypeVar("T")

# Queue priorities of the model thread, most urgent first (see the module's docstring).
INTERACTIVE, ORDINARY, EXPERIMENT = 0, 1, 2


def yield_cpu(nice: int) -> None:
    """Set the calling thread's Linux nice value `nice` above the process's (up to 19), so that
    when the cores are short the scheduler runs the server's event loop and other programs before
    it. Models are compute that can wait a few milliseconds; the event loop is what notices a
    client that hung up (whose work then stops) and what takes the next request: with compare's
    lanes on every core, niced lanes let the event loop wake up closer to time (docs/SERVER.md).
    Linux only: elsewhere a nice value belongs to the whole process, which is left alone."""
    if nice <= 0 or not sys.platform.startswith("linux"):
        return
    with contextlib.suppress(OSError):  # above the main thread's value: a lane inherits its creator's
        base = os.getpriority(os.PRIO_PROCESS, os.getpid())
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), min(19, base + nice))


class Abandoned(Exception):
    """Nobody wants this answer any more (its client hung up), so it was not computed."""


class Dropped:
    """How much model work nobody wanted any more: `skipped` jobs whose client had gone before their
    turn (Abandoned), `stopped` searches cut short between two decoder steps (Stopped). Typing makes
    many (each keystroke supersedes the last text's work): the server doing its job, so counted and
    shown by GET /api/health, never logged as errors. Updated from the model thread and the lanes."""

    def __init__(self):
        self._lock = threading.Lock()
        self.skipped = 0
        self.stopped = 0

    def count(self, error: BaseException) -> None:
        with self._lock:
            if isinstance(error, Abandoned):
                self.skipped += 1
            elif isinstance(error, Stopped):
                self.stopped += 1

    def as_dict(self) -> dict[str, int]:
        with self._lock:
            return {"skipped": self.skipped, "stopped": self.stopped}


class Load:
    """What the model thread does, for GET /metrics (app/runtime/metrics.py): turns waiting for it,
    seconds spent running them, and how many jobs each turn ran (a compare's models run as one)."""

    def __init__(self):
        self._lock = threading.Lock()
        self.waiting = 0
        self.busy_seconds = 0.0
        self.sizes: Counter[int] = Counter()  # jobs in a turn -> turns
        self.paused = 0  # turns run inside another's pause (ModelThread.pause)
        self._depth = 0  # turns open now: more than one while a long job pauses for urgent ones

    def queued(self) -> None:
        with self._lock:
            self.waiting += 1

    def unqueued(self) -> None:
        """A queued turn dropped without running (the model thread closed)."""
        with self._lock:
            self.waiting -= 1

    @contextlib.contextmanager
    def turn(self, jobs: int):
        """Around one turn of the model thread, from its start to its end."""
        with self._lock:
            self.waiting -= 1
            self._depth += 1
            if self._depth > 1:
                self.paused += 1
        began = time.perf_counter()
        try:
            yield
        finally:
            with self._lock:
                self._depth -= 1
                if self._depth == 0:  # a turn run inside a pause is already in the paused one's time
                    self.busy_seconds += time.perf_counter() - began
                self.sizes[jobs] += 1

    def histogram(self, bounds: tuple[int, ...]) -> tuple[list[tuple[str, int]], float, int]:
        """Cumulative (upper bound, turns) pairs ending with +Inf, the sum of the sizes and the count."""
        with self._lock:
            sizes = dict(self.sizes)
        buckets = [(str(b), sum(n for size, n in sizes.items() if size <= b)) for b in bounds]
        count = sum(sizes.values())
        return [*buckets, ("+Inf", count)], float(sum(size * n for size, n in sizes.items())), count


class ModelThread:
    def __init__(self, torch_threads: int | None = None, lanes: int | None = None, nice: int = 0):
        """torch_threads: intra-op threads for the models; None: every core while the machine is
        otherwise quiet, one while other programs wait for the CPU (see cores.py). lanes: how many
        jobs of a `run_together` batch run at once; None: one per core. nice: added to the Linux
        nice value of the threads that run models (see `yield_cpu`)."""
        self.torch_threads = torch_threads
        self.cores = None if torch_threads else CoreShare(torch.get_num_threads())
        self.lanes = max(1, lanes or torch.get_num_threads())
        self.nice = nice
        self.dropped = Dropped()
        self.load = Load()
        # heap of (priority, order, turn, the turn's futures: cancelled if it never runs)
        self._queue: list[tuple[int, int, Callable[[], None], list[Future]]] = []
        self._order = itertools.count()
        self._ready = threading.Condition()
        self._closed = False
        self._running: list[int] = []  # priorities of the turns open on the model thread, innermost last
        self._side = ThreadPoolExecutor(self.lanes - 1, thread_name_prefix="models-lane",
                                        initializer=yield_cpu, initargs=(nice,)) if self.lanes > 1 else None
        self._thread = threading.Thread(target=self._serve, name="models", daemon=True)
        self._thread.start()

    def _setup(self) -> None:
        yield_cpu(self.nice)  # before torch starts its OpenMP threads, which inherit it
        if self.torch_threads:
            set_intra_op(self.torch_threads)
        # the torch state a turn starts from; a turn run inside a pause gets it back (see `pause`)
        self._grad, self._inference = torch.is_grad_enabled(), torch.is_inference_mode_enabled()

    def _serve(self) -> None:
        self._setup()
        while True:
            with self._ready:
                while not self._queue and not self._closed:
                    self._ready.wait()
                if not self._queue:
                    return
                priority, _, turn, _ = heapq.heappop(self._queue)
            self._run_turn(priority, turn)

    def _run_turn(self, priority: int, turn: Callable[[], None]) -> None:
        self._running.append(priority)
        try:
            turn()
        finally:
            self._running.pop()

    def _queue_turn(self, priority: int, turn: Callable[[], None], futures: list[Future]) -> None:
        with self._ready:
            if self._closed:
                raise RuntimeError("the model thread is closed")
            self.load.queued()
            heapq.heappush(self._queue, (priority, next(self._order), turn, futures))
            self._ready.notify()

    def pause(self) -> None:
        """Called by a long job between two of its steps, on the model thread: first run every
        queued job more urgent than it (see the module's docstring), each from the torch state a
        turn starts from (grad mode, inference mode, intra-op threads), then give the long job its
        own back. Anywhere else (another thread, no turn running): nothing."""
        if threading.current_thread() is not self._thread or not self._running:
            return
        current = self._running[-1]
        while True:
            with self._ready:
                if not self._queue or self._queue[0][0] >= current:
                    return
                priority, _, turn, _ = heapq.heappop(self._queue)
            with intra_op(torch.get_num_threads()), torch.inference_mode(self._inference), \
                    torch.set_grad_enabled(self._grad):
                self._run_turn(priority, turn)

    def _share_cores(self) -> None:
        if self.cores is not None:
            set_intra_op(self.cores.threads())

    def submit(self, fn: Callable[..., T], *args, cancel: threading.Event | None = None,
               priority: int = ORDINARY, **kwargs) -> Future[T]:
        """Queue fn(*args, **kwargs) for the model thread at `priority`; its Future. If `cancel`
        is set by the time its turn comes, fn is not run and the Future raises Abandoned."""
        future: Future[T] = Future()

        def job() -> None:
            with self.load.turn(1):
                if not future.set_running_or_notify_cancel():
                    return
                try:
                    if cancel is not None and cancel.is_set():
                        raise Abandoned()
                    self._share_cores()
                    future.set_result(fn(*args, **kwargs))
                except BaseException as error:  # handed to whoever waits on the future
                    self.dropped.count(error)
                    future.set_exception(error)

        self._queue_turn(priority, job, [future])
        return future

    def run_together(self, jobs: list[Callable[[], T]], cancel: threading.Event | None = None,
                     start: list[int] | None = None, priority: int = INTERACTIVE) -> list[Future[T]]:
        """Queue a batch of independent jobs that only read the loaded models, as one turn of the
        model thread at `priority`; a Future per job, in the order given. When its turn comes the
        batch runs on up to `lanes` threads at once (one intra-op thread each), each lane taking
        the next job, in the order `start` lists their indices (default: as given; longest first
        keeps the lanes evenly busy). A job whose turn comes after `cancel` is set is not run
        (Abandoned)."""
        futures: list[Future[T]] = [Future() for _ in jobs]
        start = list(range(len(jobs))) if start is None else start
        pending = deque((jobs[i], futures[i]) for i in start)
        lock = threading.Lock()

        def drain() -> None:
            while True:
                with lock:
                    if not pending:
                        return
                    job, future = pending.popleft()
                if not future.set_running_or_notify_cancel():
                    continue
                try:
                    if cancel is not None and cancel.is_set():
                        raise Abandoned()
                    future.set_result(job())
                except BaseException as error:  # handed to whoever waits on the future
                    self.dropped.count(error)
                    future.set_exception(error)

        def lane() -> None:
            set_intra_op(1)  # MKL's count is process-wide: each lane sets it again
            drain()

        def lead() -> None:
            with self.load.turn(len(jobs)):
                together()

        def together() -> None:
            # kept while other programs want the CPU (the reader's browser): a lane has one thread,
            # so no split operation waits on a thread they preempt (see the module's docstring)
            lanes = min(self.lanes, len(jobs))
            if lanes == 1:  # as `submit` runs a job
                self._share_cores()
                return drain()
            with intra_op(1):
                others = [self._side.submit(lane) for _ in range(lanes - 1)]
                try:
                    drain()
                finally:
                    wait(others)  # the model thread is free again only when no lane runs

        self._queue_turn(priority, lead, futures)
        return futures

    def run(self, fn: Callable[..., T], *args, cancel: threading.Event | None = None,
            priority: int = ORDINARY, **kwargs) -> T:
        """fn(*args, **kwargs) on the model thread; its result, or its exception re-raised here."""
        return self.submit(fn, *args, cancel=cancel, priority=priority, **kwargs).result()

    def close(self) -> None:
        """Stop taking work, drop what is queued (its futures cancelled), wait for the running turn."""
        with self._ready:
            self._closed = True
            dropped, self._queue = self._queue, []
            self._ready.notify()
        for *_, futures in dropped:
            self.load.unqueued()
            for future in futures:
                future.cancel()
        if threading.current_thread() is not self._thread:
            self._thread.join()
        if self._side is not None:
            self._side.shutdown(wait=True, cancel_futures=True)
