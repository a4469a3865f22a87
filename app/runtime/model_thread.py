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

Interactive work first (the order is app/runtime/scheduler.py's `TurnQueue`). Jobs queue by
priority (INTERACTIVE: typing's compares; ORDINARY; then EXPERIMENT: chapter experiments that take
seconds, such as the gradients chapter's experiment), first come first
served within one, but with patience: a less urgent job lets more urgent ones go first only if they
were queued less than its priority's PATIENCE_S after it, so steady typing delays it, never starves
it. A job that has started is not interrupted by the operating system (a second thread running
models beside it is what the paragraphs above rule out); instead a long job calls
`pause()` between its steps, and every queued job more urgent than it runs there, on this same
thread, before the long job goes on. So a compare queued behind a 5-second experiment waits for one
step (a power iteration, a model's curve: tens of milliseconds), not for the experiment. The paused
job's state stays on its stack untouched, and the jobs run in between only read the loaded models,
so every answer is the one it would be without pausing (tests/app/runtime/test_model_thread.py). Urgent work
does not take it all, though: over the whole long job, the urgent work run in its pauses gets as long
as the job's own steps have had, no more (an account kept per open turn): a pause runs queued jobs
while the account is in their favour, then the long job takes its next step. A pause after a short
step (a power iteration of a few milliseconds) therefore does not always cost a whole step of
every reader's decoding: one that overran is paid back by the pauses after it. Under steady typing
the queue never empties, and a pause that waited for it to empty starved the gradients chapter's reader for
the whole time others typed (bench/README.md, readers.py); shared this way, an experiment takes
about twice its time while others type, and a compare waits at most about one step more. And while
the long job takes a step, the readers' stepped decoding does not wait for its next pause: a side
lane steps their sentences on the other core meanwhile (`_step_beside`), since those steps, like a
paused job's, only read the loaded models.

Stepped decoding across readers (`batching`, `step_together`) is its own idea, an object the model
thread owns (`stepped`) and lends only its lock, queue and lanes: app/runtime/stepped_decoding.py.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import threading
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from functools import partial
from typing import Any, TypeVar

import torch

from app.runtime.cores import CoreShare
from app.runtime.counters import Dropped, Load
from app.runtime.errors import Abandoned
from app.runtime.scheduler import EXPERIMENT, INTERACTIVE, ORDINARY, Turn, TurnQueue, oldest, pause_until
from app.runtime.stepped_decoding import Batchable, SteppedDecoding, settle
from models.serving.threads import intra_op, set_intra_op

T = TypeVar("T")
log = logging.getLogger("attention_lab")


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


@dataclass
class _Batch:
    """One `run_together` call's jobs as queued: what the turn that runs them needs."""

    jobs: list[Callable[[], Any]]
    futures: list[Future]
    cancel: threading.Event | None
    start: list[int]



class ModelThread:
    def __init__(self, torch_threads: int | None = None, lanes: int | None = None, nice: int = 0,
                 batching: bool = False, pool_rows: int = 8, load: Load | None = None):
        """torch_threads: intra-op threads for the models; None: every core while the machine is
        otherwise quiet, one while other programs wait for the CPU (see cores.py). lanes: how many
        jobs of a `run_together` batch run at once; None: one per core. nice: added to the Linux
        nice value of the threads that run models (see `yield_cpu`). batching: queued batches with
        Batchables run their groups together (see the module's docstring). load: where its work is
        counted (a stepper process relays it to the server)."""
        self.torch_threads = torch_threads
        self.cores = None if torch_threads else CoreShare(torch.get_num_threads())
        self.lanes = max(1, lanes or torch.get_num_threads())
        self.nice = nice
        self.batching = batching
        self.pool_rows = pool_rows
        self.dropped = Dropped()
        self.load = load or Load()
        self._queue = TurnQueue()  # which turn runs next (app/runtime/scheduler.py)
        self._ready = threading.Condition()
        self._pause_until: float | None = None  # when the pause running now ends (`pause`)
        self._closed = False
        self._running: list[int] = []  # priorities of the turns open on the model thread, innermost last
        self._resumed: list[float] = []  # per open turn, when it last started or came back from a pause
        # per open turn, its account: [its own time running, the time its pauses gave urgent work]
        self._account: list[list[float]] = []
        # a long job is running one of its steps on the model thread (between two pauses), and a side
        # lane is stepping readers' sentences meanwhile (`_side_steps`)
        self._long_step = self._side_stepping = False
        self._side = ThreadPoolExecutor(self.lanes - 1, thread_name_prefix="models-lane",
                                        initializer=yield_cpu, initargs=(nice,)) if self.lanes > 1 else None
        # continuous batching (`step_together`): it queues its step turns here, on these lanes
        self.stepped = SteppedDecoding(lock=self._ready, queue_turn=self._queue_turn, together=self._together,
                                       pause_ends=lambda: self._pause_until, queued=self._step_beside_if_long,
                                       lanes=self.lanes, pool_rows=pool_rows, load=self.load,
                                       dropped=self.dropped)
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
                turn = self._queue.pop()
            self._take(turn)

    def _take(self, turn: Turn) -> None:
        """Run a queued turn, timed into its client's account; a fault in it fails its own requests
        and the thread goes on."""
        began = time.perf_counter()
        try:
            self._run_turn(turn.priority, turn.run)
        except BaseException as error:
            log.exception("model thread: a turn failed")
            settle([f for f in turn.futures if not f.done()], error)
        finally:
            with self._ready:
                self._queue.ran(turn.client, time.perf_counter() - began)

    def _run_turn(self, priority: int, turn: Callable[[], None]) -> None:
        self._running.append(priority)
        self._resumed.append(time.perf_counter())
        self._account.append([0.0, 0.0])
        try:
            turn()
        finally:
            self._running.pop()
            self._resumed.pop()
            self._account.pop()
            if not self._running:
                with self._ready:
                    self._long_step = False

    def _queue_turn(self, priority: int, turn: Callable[[], None], futures: list[Future],
                    client: str = "") -> None:
        """Queue `turn`, due once its client's turns queued before it are through (as long as each
        of its turns has taken lately: `FairShare`) plus its priority's patience: a client who
        queues many turns at once gets its share of the thread, turn by turn between other clients'."""
        with self._ready:
            if self._closed:
                raise RuntimeError("the model thread is closed")
            self.load.queued()
            self._queue.push(priority, turn, futures, client, time.perf_counter())
            self._ready.notify()

    def ages(self) -> dict[str, float]:
        """Per client with work queued (a turn more urgent than an experiment, or a sentence not yet
        stepped), how long its oldest has waited: what admission (app/admission.py) refuses by."""
        with self._ready:
            queued = [*self._queue.waiting(EXPERIMENT), *self.stepped.waiting()]
        return oldest(queued, time.perf_counter())

    def pause(self) -> None:
        """Called by a long job between two of its steps, on the model thread: first run the queued
        jobs more urgent than it, most urgent first, while the job's account is in their favour
        (they have had less time in its pauses than it has had running; see the module's
        docstring), each from the torch state a turn starts from (grad mode, inference mode,
        intra-op threads), then give the long job its own back. Anywhere else (another thread, no
        turn running): nothing."""
        if threading.current_thread() is not self._thread or not self._running:
            return
        current, account = self._running[-1], self._account[-1]
        with self._ready:
            self._long_step = False
        began = time.perf_counter()
        account[0] += began - self._resumed[-1]
        # no later than the account allows: at once when an earlier pause overran
        until = pause_until(began, account[0], account[1])
        self._pause_until = until  # a slice of stepped decoding run here ends by then (`step_turn`)
        try:
            while time.perf_counter() < until:
                with self._ready:
                    first = self._queue.urgent(current)
                    if first is None:
                        return
                with intra_op(torch.get_num_threads()), torch.inference_mode(self._inference), \
                        torch.set_grad_enabled(self._grad):
                    self._take(first)
        finally:
            self._pause_until = None
            self._resumed[-1] = time.perf_counter()
            account[1] += self._resumed[-1] - began
            with self._ready:
                self._long_step = True
                self._step_beside()

    def lent(self) -> float:
        """Seconds the running turn's pauses have given other work so far (0 off the model thread):
        what a long job's own time leaves out (`Jobs.result` with a meter)."""
        if threading.current_thread() is not self._thread or not self._account:
            return 0.0
        return self._account[-1][1]

    def _step_beside(self) -> None:
        """Under the lock, as a long job takes its next step: the readers' stepped decoding, if a turn
        of it is queued, goes on on a side lane meanwhile (`_side_steps`), on the core the long job
        leaves idle, instead of waiting for the job's next pause."""
        if self._side is None or self._side_stepping or not self._take_step_turn():
            return
        self._side_stepping = True
        self._side.submit(self._side_steps)

    def _step_beside_if_long(self) -> None:
        """Under the lock, as a turn of stepped decoding is queued: a long job's step holding the model
        thread, a side lane steps it now."""
        if self._long_step:
            self._step_beside()

    def _take_step_turn(self) -> bool:
        """Under the lock: the queued turn of stepped decoding taken out of the queue (False: none)."""
        return self._queue.take(self.stepped.step_turn)

    def _side_steps(self) -> None:
        """On a side lane, while the model thread runs a long job's step: turns of stepped decoding,
        one lane each, as long as one is queued again; the model thread takes the next one otherwise
        (in the job's next pause, or after the job)."""
        set_intra_op(1)
        try:
            while True:
                self.stepped.step_turn(one_lane=True)
                with self._ready:
                    if not (self._long_step and self._take_step_turn()):
                        return
        finally:
            with self._ready:
                self._side_stepping = False

    def _share_cores(self) -> None:
        if self.cores is not None:
            set_intra_op(self.cores.threads())

    def submit(self, fn: Callable[..., T], *args, cancel: threading.Event | None = None,
               priority: int = ORDINARY, client: str = "", **kwargs) -> Future[T]:
        """Queue fn(*args, **kwargs) for the model thread at `priority`, as `client`'s turn; its
        Future. If `cancel` is set by the time its turn comes, fn is not run and the Future raises
        Abandoned."""
        future: Future[T] = Future()

        def job() -> None:
            with self.load.turn():
                if not future.set_running_or_notify_cancel():
                    return
                self.load.ran(1)
                self._share_cores()
                self._settle(future, cancel, partial(fn, *args, **kwargs))

        self._queue_turn(priority, job, [future], client)
        return future

    def step_together(self, spec: Batchable, cancel: threading.Event | None = None) -> Future:
        """`spec` stepped with the other readers' sentences of its group, a step at a time
        (SteppedDecoding.step_together); its Future."""
        return self.stepped.step_together(spec, cancel)

    def run_together(self, jobs: list[Callable[[], T]], cancel: threading.Event | None = None,
                     start: list[int] | None = None, priority: int = INTERACTIVE,
                     client: str = "") -> list[Future[T]]:
        """Queue a batch of independent jobs that only read the loaded models, as one turn of the
        model thread at `priority`; a Future per job, in the order given. When its turn comes the
        batch runs on up to `lanes` threads at once (one intra-op thread each), each lane taking
        the next job, in the order `start` lists their indices (default: as given; longest first
        keeps the lanes evenly busy). A job whose turn comes after `cancel` is set is not run
        (Abandoned)."""
        futures: list[Future[T]] = [Future() for _ in jobs]
        batch = _Batch(jobs, futures, cancel, list(range(len(jobs))) if start is None else start)

        def lead() -> None:
            with self.load.turn():
                self._together([partial(self._run_job, batch, i) for i in batch.start])

        self._queue_turn(priority, lead, futures, client)
        return futures

    def _run_job(self, batch: _Batch, i: int) -> None:
        future = batch.futures[i]
        if future.set_running_or_notify_cancel():
            self.load.ran(1)
            self._settle(future, batch.cancel, batch.jobs[i])

    def _settle(self, future: Future, cancel: threading.Event | None, job: Callable[[], Any]) -> None:
        """job()'s result or exception into `future` (already running); not run once `cancel` is set."""
        try:
            if cancel is not None and cancel.is_set():
                raise Abandoned()
            future.set_result(job())
        except BaseException as error:  # handed to whoever waits on the future
            self.dropped.count(error)
            future.set_exception(error)

    def _together(self, tasks: list[Callable[[], None]]) -> None:
        """Run `tasks` on up to `lanes` threads, each lane taking the next; back when all are done.
        Kept while other programs want the CPU (the reader's browser): a lane has one thread, so no
        split operation waits on a thread they preempt (see the module's docstring)."""
        pending = deque(tasks)
        lock = threading.Lock()

        def drain() -> None:
            while True:
                with lock:
                    if not pending:
                        return
                    task = pending.popleft()
                task()

        def lane() -> None:
            set_intra_op(1)  # MKL's count is process-wide: each lane sets it again
            drain()

        lanes = min(self.lanes, len(tasks))
        if lanes <= 1:  # as `submit` runs a job
            self._share_cores()
            return drain()
        with intra_op(1):
            others = [self._side.submit(lane) for _ in range(lanes - 1)]
            try:
                drain()
            finally:
                wait(others)  # the model thread is free again only when no lane runs

    def run(self, fn: Callable[..., T], *args, cancel: threading.Event | None = None,
            priority: int = ORDINARY, **kwargs) -> T:
        """fn(*args, **kwargs) on the model thread; its result, or its exception re-raised here."""
        return self.submit(fn, *args, cancel=cancel, priority=priority, **kwargs).result()

    def close(self) -> None:
        """Stop taking work, drop what is queued (its futures cancelled), wait for the running turn."""
        with self._ready:  # the pools change under this lock too
            self._closed = True
            dropped = self._queue.drain()
            waiting = self.stepped.close()
            self._ready.notify()
        for turn in dropped:
            self.load.unqueued()
            for future in turn.futures:
                future.cancel()
        for future in waiting:
            future.cancel()
        if threading.current_thread() is not self._thread:
            self._thread.join()
        if self._side is not None:
            self._side.shutdown(wait=True, cancel_futures=True)
