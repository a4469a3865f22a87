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
served within one, but with patience: a less urgent job lets more urgent ones go first only if they
were queued less than its priority's PATIENCE_S after it, so steady typing delays it, never starves
it. A job that has started is not interrupted by the operating system (a second thread running
models beside it is what the paragraphs above rule out); instead a long job calls
`pause()` between its steps, and every queued job more urgent than it runs there, on this same
thread, before the long job goes on. So a compare queued behind a 5-second experiment waits for one
step (a power iteration, a model's curve: tens of milliseconds), not for the experiment. The paused
job's state stays on its stack untouched, and the jobs run in between only read the loaded models,
so every answer is the one it would be without pausing (tests/app/runtime/test_worker.py). Urgent work
does not take it all, though: a pause runs queued jobs for about as long as the step before it took
(at least one job), then the long job takes its next step. Under steady typing the queue never
empties, and a pause that waited for it to empty starved the reader of chapter 3 for the whole
time others typed (bench/README.md, readers.py); shared this way, an experiment takes about twice
its time while others type, and a compare waits at most about one step more.

Batching across readers, step by step (`batching`, on by default): a job may come as a `Batchable`
instead (POST /api/compare's greedy search of one model on one text). It joins its model's pool of
sentences (models/serving/batch.Pool through the app's adapter) and the model thread takes one
decoding step for every sentence of every pool at a time, one pool per lane: one step reads a
model's weights once for every reader whose text is live, the scheduling serving engines call
iteration-level or continuous batching. Each step is a short turn of its own (INTERACTIVE), queued
again while a pool has sentences, so other work and a long job's pauses come between two steps: a
new text is encoded and joins at the next step, a finished one's answer is handed over at once, and
one whose reader has gone (or typed on) leaves before the next. Identical work (the same model on
the same text, `key`) is one sentence for every reader asking; it stops when none wants it. A pool
holds at most `pool_rows` sentences; more wait their turn, oldest first, and cost nothing if their
reader types on meanwhile. A sentence with nothing to step with (a reader alone) runs by itself, the
one-sentence search (`Batchable.alone`): a pool's bookkeeping at every step cost a lone compare
about a third more time. In a pool of several, products sum in another order than one sentence's
(models/serving/batch.py; docs/SERVER.md, "Fidelity").
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
from collections.abc import Callable, Hashable
from concurrent.futures import Future, InvalidStateError, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Protocol, TypeVar

import torch

from app.runtime.cores import CoreShare
from models.decoding import Stopped
from models.serving.threads import intra_op, set_intra_op

T = TypeVar("T")

# Queue priorities of the model thread, most urgent first (see the module's docstring).
INTERACTIVE, ORDINARY, EXPERIMENT = 0, 1, 2
# How long a queued turn of each priority lets later, more urgent turns go first: it runs before any
# turn queued more than this after it. Without a bound, steady typing (a compare always queued)
# kept a chapter's request, or chapter 3's experiment, from ever starting.
PATIENCE_S = {INTERACTIVE: 0.0, ORDINARY: 0.25, EXPERIMENT: 1.0}
# How long one turn of stepped decoding runs (`_step_turn`) before queued work gets its turn: many
# decoding steps, so the lanes are not handed over and back at every step
STEP_SLICE_S = 0.02
# How long a lane steps one pool in a row while no sentence waits to join it: a few steps of one model
# per hand-over, the others' steps following within that
STEP_BURST_S = 0.003


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


# seconds from a sentence's arrival to its first decoding step (GET /metrics)
WAIT_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5)


class Load:
    """What the model thread does, for GET /metrics (app/runtime/metrics.py): turns waiting for it,
    seconds spent running them, per model how many sentences one run or step decoded together (1:
    alone), and per model how long a stepped sentence waited for its first step."""

    def __init__(self):
        self._lock = threading.Lock()
        self.waiting = 0
        self.busy_seconds = 0.0
        self.sizes: Counter[tuple[str, int]] = Counter()  # (model, sentences run together) -> model runs
        # model -> per WAIT_BUCKETS bound (and +Inf) the sentences that waited at most that long, and the sum
        self.waits: dict[str, tuple[list[int], float]] = {}
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
    def turn(self):
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

    def ran(self, together: int, model: str = "") -> None:
        """One run (or decoding step) of `model` on `together` sentences at once ("": unnamed work)."""
        with self._lock:
            self.sizes[model, together] += 1

    def waited(self, model: str, seconds: float) -> None:
        """A sentence of `model` took its first step `seconds` after it arrived."""
        with self._lock:
            counts, total = self.waits.get(model) or ([0] * (len(WAIT_BUCKETS) + 1), 0.0)
            for i, bound in enumerate((*WAIT_BUCKETS, float("inf"))):
                counts[i] += seconds <= bound
            self.waits[model] = counts, total + seconds

    def models(self) -> list[str]:
        with self._lock:
            return sorted({model for model, _ in self.sizes} | set(self.waits))

    def histogram(self, bounds: tuple[int, ...],
                  model: str | None = None) -> tuple[list[tuple[str, int]], float, int]:
        """Cumulative (upper bound, runs) pairs ending with +Inf, the sum of the sizes and the count,
        of `model`'s runs (None: every run)."""
        sizes: Counter[int] = Counter()
        with self._lock:
            for (name, size), n in self.sizes.items():
                if model is None or name == model:
                    sizes[size] += n
        buckets = [(str(b), sum(n for size, n in sizes.items() if size <= b)) for b in bounds]
        count = sum(sizes.values())
        return [*buckets, ("+Inf", count)], float(sum(size * n for size, n in sizes.items())), count

    def wait_histogram(self, model: str) -> tuple[list[tuple[str, int]], float, int]:
        """`model`'s waits for a first step as cumulative (upper bound, sentences) pairs, sum, count."""
        with self._lock:
            counts, total = self.waits.get(model) or ([0] * (len(WAIT_BUCKETS) + 1), 0.0)
        bounds = [*(str(b) for b in WAIT_BUCKETS), "+Inf"]
        return list(zip(bounds, counts, strict=True)), total, counts[-1]


class Pool(Protocol):
    """The sentences of one `Batchable.group` being decoded, stepped together (the app's adapter of
    models/serving/batch.Pool)."""

    def join(self, sentences: list[tuple[Any, Any, Callable[[], bool]]]) -> None:
        """(handle, item, stop) per new sentence: from the next step on it is decoded; stop() true
        before a step: it leaves with a Stopped."""

    def step(self) -> list[tuple[Any, Any]]:
        """One decoding step for every sentence: (handle, its answer or the exception it ended with)
        per sentence that ended."""

    def __len__(self) -> int: ...


@dataclass(frozen=True)
class Batchable:
    """A job that runs stepped together with other readers' (see the module's docstring): it joins
    the pool of its `group` (one model's greedy search), which `pool()` makes the first time, as
    `item`; work of the same `key` is done once for every reader asking. `model` names the group in
    the metrics."""

    group: Hashable
    key: Hashable
    item: Any
    pool: Callable[[], Pool]
    model: str = ""
    # the same answer computed by itself, for a sentence with nothing to step with (a reader alone):
    # the one-sentence search, without a pool's bookkeeping at every step
    alone: Callable[[], Any] | None = None


@dataclass(eq=False)
class _Sentence:
    """One Batchable's work in its pool: the readers waiting for it (their Future and cancel flag)."""

    spec: Batchable
    arrived: float
    waiters: list[tuple[Future, threading.Event | None]] = field(default_factory=list)
    ended: bool = False  # set under the model thread's lock before it is settled: no reader joins it after

    def wanted(self) -> bool:
        """Someone still waits for the answer (a Future not cancelled, whose flag is not set)."""
        return any(not future.done() and not (cancel is not None and cancel.is_set())
                   for future, cancel in self.waiters)

    def settle(self, result: Any) -> None:
        for future, _ in self.waiters:
            with contextlib.suppress(InvalidStateError):  # cancelled meanwhile by its reader
                if isinstance(result, BaseException):
                    future.set_exception(result)
                else:
                    future.set_result(result)


@dataclass
class _Batch:
    """One `run_together` call's jobs as queued: what the turn that runs them needs."""

    jobs: list[Callable[[], Any]]
    futures: list[Future]
    cancel: threading.Event | None
    start: list[int]


class ModelThread:
    def __init__(self, torch_threads: int | None = None, lanes: int | None = None, nice: int = 0,
                 batching: bool = False, pool_rows: int = 8):
        """torch_threads: intra-op threads for the models; None: every core while the machine is
        otherwise quiet, one while other programs wait for the CPU (see cores.py). lanes: how many
        jobs of a `run_together` batch run at once; None: one per core. nice: added to the Linux
        nice value of the threads that run models (see `yield_cpu`). batching: queued batches with
        Batchables run their groups together (see the module's docstring)."""
        self.torch_threads = torch_threads
        self.cores = None if torch_threads else CoreShare(torch.get_num_threads())
        self.lanes = max(1, lanes or torch.get_num_threads())
        self.nice = nice
        self.batching = batching
        self.pool_rows = pool_rows
        self.dropped = Dropped()
        self.load = Load()
        # heap of (due: when it was queued plus its priority's patience, order, priority, turn, the
        # turn's futures: cancelled if it never runs, when it was queued); the earliest due runs first
        self._queue: list[tuple[float, int, int, Callable[[], None], list[Future], float]] = []
        # continuous batching (`step_together`): per group its pool, the sentences in it by key, and
        # the ones that join at the next step; whether a step turn is queued or running
        # pools and the sentences in them by (group, shard): while fewer groups have work than there
        # are lanes, a group's sentences are shared out over a pool per free lane, so that one model
        # can be stepped on every core (`_shards`); joining, by group
        self._pools: dict[tuple[Hashable, int], Pool] = {}
        self._live: dict[tuple[Hashable, int], dict[Hashable, _Sentence]] = {}
        self._joining: dict[Hashable, dict[Hashable, _Sentence]] = {}
        self._stepping = False
        self._rotation: deque[Hashable] = deque()  # groups in the order their next steps come
        self._pause_until: float | None = None  # when the pause running now ends (`pause`)
        self._order = itertools.count()
        self._ready = threading.Condition()
        self._closed = False
        self._running: list[int] = []  # priorities of the turns open on the model thread, innermost last
        self._resumed: list[float] = []  # per open turn, when it last started or came back from a pause
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
                _, _, priority, turn, *_ = heapq.heappop(self._queue)
            self._run_turn(priority, turn)

    def _run_turn(self, priority: int, turn: Callable[[], None]) -> None:
        self._running.append(priority)
        self._resumed.append(time.perf_counter())
        try:
            turn()
        finally:
            self._running.pop()
            self._resumed.pop()

    def _queue_turn(self, priority: int, turn: Callable[[], None], futures: list[Future]) -> None:
        with self._ready:
            if self._closed:
                raise RuntimeError("the model thread is closed")
            self.load.queued()
            now = time.perf_counter()
            heapq.heappush(self._queue, (now + PATIENCE_S.get(priority, 0.0), next(self._order), priority, turn,
                                         futures, now))
            self._ready.notify()

    def waited(self) -> float:
        """Seconds the oldest work a new request would wait behind has been waiting: the oldest
        queued turn more urgent than an experiment, or the oldest sentence not yet stepped (0: none).
        What admission (app/admission.py) refuses by: the wait a new request would meet."""
        now = time.perf_counter()
        with self._ready:
            queued = [entry[5] for entry in self._queue if entry[2] < EXPERIMENT]
            queued += [s.arrived for group in self._joining.values() for s in group.values()]
        return now - min(queued) if queued else 0.0

    def pause(self) -> None:
        """Called by a long job between two of its steps, on the model thread: first run the queued
        jobs more urgent than it, most urgent first, until they have had about as long as its last
        step (at least one; see the module's docstring), each from the torch state a turn starts
        from (grad mode, inference mode, intra-op threads), then give the long job its own back.
        Anywhere else (another thread, no turn running): nothing."""
        if threading.current_thread() is not self._thread or not self._running:
            return
        current = self._running[-1]
        began = time.perf_counter()
        until = began + (began - self._resumed[-1])  # as long as the step before took
        self._pause_until = until  # a slice of stepped decoding run here ends by then (`_step_turn`)
        try:
            while True:
                with self._ready:
                    urgent = [entry for entry in self._queue if entry[2] < current]
                    if not urgent:
                        return
                    first = min(urgent)  # the earliest due of the more urgent ones
                    self._queue.remove(first)
                    heapq.heapify(self._queue)
                    _, _, priority, turn, *_ = first
                with intra_op(torch.get_num_threads()), torch.inference_mode(self._inference), \
                        torch.set_grad_enabled(self._grad):
                    self._run_turn(priority, turn)
                if time.perf_counter() >= until:
                    return
        finally:
            self._pause_until = None
            self._resumed[-1] = time.perf_counter()

    def _share_cores(self) -> None:
        if self.cores is not None:
            set_intra_op(self.cores.threads())

    def submit(self, fn: Callable[..., T], *args, cancel: threading.Event | None = None,
               priority: int = ORDINARY, **kwargs) -> Future[T]:
        """Queue fn(*args, **kwargs) for the model thread at `priority`; its Future. If `cancel`
        is set by the time its turn comes, fn is not run and the Future raises Abandoned."""
        future: Future[T] = Future()

        def job() -> None:
            with self.load.turn():
                if not future.set_running_or_notify_cancel():
                    return
                self.load.ran(1)
                self._share_cores()
                self._settle(future, cancel, partial(fn, *args, **kwargs))

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
        batch = _Batch(jobs, futures, cancel, list(range(len(jobs))) if start is None else start)

        def lead() -> None:
            with self.load.turn():
                self._together([partial(self._run_job, batch, i) for i in batch.start])

        self._queue_turn(priority, lead, futures)
        return futures

    def _run_job(self, batch: _Batch, i: int) -> None:
        future = batch.futures[i]
        if future.set_running_or_notify_cancel():
            self.load.ran(1)
            self._settle(future, batch.cancel, batch.jobs[i])

    def step_together(self, spec: Batchable, cancel: threading.Event | None = None) -> Future:
        """Queue `spec` to be stepped with the other sentences of its group (see the module's
        docstring): its Future, settled as soon as its sentence ends. Work of the same key already
        waiting or running is shared, not done twice. A sentence nobody wants any more (every
        reader's Future cancelled or `cancel` set) is not started (Abandoned) or leaves (Stopped)."""
        future: Future = Future()
        with self._ready:
            if self._closed:
                raise RuntimeError("the model thread is closed")
            sentence = self._joining.get(spec.group, {}).get(spec.key) or next(
                (live[spec.key] for (group, _), live in self._live.items()
                 if group == spec.group and spec.key in live), None)
            if sentence is None or sentence.ended or not sentence.wanted():
                sentence = _Sentence(spec, time.perf_counter())
                self._joining.setdefault(spec.group, {})[spec.key] = sentence
            sentence.waiters.append((future, cancel))
            if not self._stepping:
                self._stepping = True
                self._queue_turn(INTERACTIVE, self._step_turn, [])
        return future

    def _step_turn(self) -> None:
        """Decoding steps of every pool, for about STEP_SLICE_S: each lane takes the group stepped
        longest ago, lets its new sentences join, takes one step, and puts it back, so no lane waits
        for another between steps and a group's steps follow each other as closely as the lanes
        allow. Queued again while any pool has sentences, so other work comes between two slices."""
        with self.load.turn():
            until = time.perf_counter() + STEP_SLICE_S
            if self._pause_until is not None:  # inside a long job's pause: no longer than it gives
                until = min(until, self._pause_until)
            order = self._rotation  # the groups not stepped in the last slice come first in this one
            busy: set[Hashable] = set()
            taken: list[bool] = []
            lock = threading.Lock()

            def take() -> tuple | None:
                with lock, self._ready:
                    shards = self._shards()
                    for unit in [*self._pools, *((g, shard) for g in self._joining for shard in range(shards))]:
                        if (unit not in busy and unit not in order
                                and (self._pools.get(unit) or unit[0] in self._joining)):
                            order.append(unit)  # every pool with work, once
                    if not order or (taken and time.perf_counter() >= until):  # one step at least
                        return None
                    taken.append(True)
                    unit = order.popleft()
                    busy.add(unit)
                    joining, gone = self._admitted(unit, shards)
                return unit, joining, gone

            def lane() -> None:
                while (taken := take()) is not None:
                    try:
                        for sentence in taken[2]:
                            self._dropped(sentence, Abandoned())
                        self._step_group(*taken[:2])
                    finally:
                        with lock:
                            busy.discard(taken[0])

            with self._ready:
                pools = len({*self._pools, *((g, s) for g in self._joining for s in range(self._shards()))})
            try:
                self._together([lane] * max(1, min(self.lanes, pools)))
            finally:
                with self._ready:
                    self._stepping = not self._closed and bool(self._joining or any(self._pools.values()))
                    if self._stepping:
                        self._queue_turn(INTERACTIVE, self._step_turn, [])

    def _shards(self) -> int:
        """Under the lock: the pools a group's new sentences are shared out over, one per lane while
        fewer groups than lanes have work (one model typed into by many readers: every core steps
        it), else one (the groups themselves keep the lanes busy, each in bigger steps)."""
        groups = {unit[0] for unit, pool in self._pools.items() if pool} | set(self._joining)
        return max(1, self.lanes // max(1, len(groups)))

    def _admitted(self, unit: tuple[Hashable, int], shards: int) -> tuple[list[_Sentence], list[_Sentence]]:
        """Under the lock: the sentences of `unit`'s group that join its pool now, oldest first, as
        many as it has room for (at most `pool_rows`, and its share of the group's sentences over its
        `shards` pools), and those nobody wants any more, dropped unstarted; the rest wait, and a
        reader who types on in the meantime costs nothing."""
        group = unit[0]
        waiting = self._joining.get(group, {})
        if unit[1] >= shards:  # a pool left from when fewer groups had work: it only drains
            return [], []
        sizes = [len(self._pools.get((group, shard)) or ()) for shard in range(shards)]
        share = -(-(sum(sizes) + len(waiting)) // shards)  # ceil
        room = min(self.pool_rows, max(share, 1)) - len(self._pools.get(unit) or ())
        joining, gone = [], []
        for key in list(waiting):
            if not waiting[key].wanted():
                gone.append(waiting.pop(key))
            elif len(joining) < room:
                joining.append(waiting.pop(key))
        if not waiting:
            self._joining.pop(group, None)
        return joining, gone

    def _step_group(self, group: tuple[Hashable, int], joining: list[_Sentence]) -> None:
        """One step of the pool `group` (a group and shard), `joining` joining it first."""
        live = self._live.setdefault(group, {})
        if self._by_itself(group, joining):
            return
        if joining:
            now = time.perf_counter()
            pool = self._pools.get(group) or self._pools.setdefault(group, joining[0].spec.pool())
            for sentence in joining:
                live[sentence.spec.key] = sentence
                self.load.waited(sentence.spec.model, now - sentence.arrived)
            try:
                pool.join([(s, s.spec.item, lambda s=s: not s.wanted()) for s in joining])
            except BaseException as error:  # every sentence of the group: the pool may be half-joined
                return self._fail(group, error)
        pool = self._pools.get(group)
        model = next(iter(live.values())).spec.model if live else ""
        burst = time.perf_counter() + STEP_BURST_S
        # steps in a row while nobody waits to join this group (no hand-over through `take` per step)
        while pool:
            self.load.ran(len(pool), model)
            try:
                ended = pool.step()
            except BaseException as error:
                return self._fail(group, error)
            self._ended(live, ended)
            if group[0] in self._joining or time.perf_counter() >= burst:
                return

    def _by_itself(self, group: tuple[Hashable, int], joining: list[_Sentence]) -> bool:
        """Run the only sentence of `group`, with an empty pool, nobody else waiting to join and
        one reader, by itself (`Batchable.alone`); False when that is not the case. A sentence that
        arrives meanwhile joins once it is done, a few milliseconds later."""
        if len(joining) != 1 or self._pools.get(group) or group[0] in self._joining:
            return False
        sentence = joining[0]
        if sentence.spec.alone is None or len(sentence.waiters) != 1:
            return False
        self.load.waited(sentence.spec.model, time.perf_counter() - sentence.arrived)
        self.load.ran(1, sentence.spec.model)
        try:
            result = sentence.spec.alone()
        except BaseException as error:  # its reader's answer
            result = error
        self._ended({}, [(sentence, result)])
        return True

    def _ended(self, live: dict[Hashable, _Sentence], ended: list[tuple[_Sentence, Any]]) -> None:
        """Sentences that ended at a step: out of `live`, then their answers handed over."""
        with self._ready:
            for sentence, _ in ended:
                live.pop(sentence.spec.key, None)
                sentence.ended = True
        for sentence, result in ended:
            if isinstance(result, BaseException):
                self.dropped.count(result)
            sentence.settle(result)

    def _dropped(self, sentence: _Sentence, error: BaseException) -> None:
        """`sentence` ends with `error` unstarted (nobody wants it)."""
        self.dropped.count(error)
        sentence.settle(error)

    def _fail(self, group: tuple[Hashable, int], error: BaseException) -> None:
        """Every sentence of `group` ends with `error`; its pool starts afresh."""
        with self._ready:
            self._pools.pop(group, None)
            sentences = list(self._live.pop(group, {}).values())
            for sentence in sentences:
                sentence.ended = True
        for sentence in sentences:
            sentence.settle(error)

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
        with self._ready:
            self._closed = True
            dropped, self._queue = self._queue, []
            self._ready.notify()
        for *_, futures, _ in dropped:
            self.load.unqueued()
            for future in futures:
                future.cancel()
        for sentences in [*self._joining.values(), *self._live.values()]:
            for sentence in sentences.values():
                for future, _ in sentence.waiters:
                    future.cancel()
        if threading.current_thread() is not self._thread:
            self._thread.join()
        if self._side is not None:
            self._side.shutdown(wait=True, cancel_futures=True)
