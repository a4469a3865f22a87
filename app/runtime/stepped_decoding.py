"""Batching across readers, step by step (`ModelThread(batching=True)`, the server's default): a job
may come as a `Batchable` instead (POST /api/compare's greedy search of one model on one text). It
joins its model's pool of sentences (models/serving/batch.Pool through the app's adapter) and the
model thread takes one decoding step for every sentence of every pool at a time, one pool per lane:
one step reads a model's weights once for every reader whose text is live, the scheduling serving
engines call iteration-level or continuous batching. Each step is a short turn of its own
(INTERACTIVE), queued again while a pool has sentences, so other work and a long job's pauses come
between two steps: a new text is encoded and joins at the next step, a finished one's answer is
handed over at once, and one whose reader has gone (or typed on) leaves before the next. Identical
work (the same model on the same text, `key`) is one sentence for every reader asking; it stops when
none wants it. A pool holds at most `pool_rows` sentences; more wait their turn, oldest first, and
cost nothing if their reader types on meanwhile. A sentence with nothing to step with (a reader
alone) runs by itself, the one-sentence search (`Batchable.alone`), spared a pool's bookkeeping at
every step. In a pool of several, products sum in another order than one sentence's
(models/serving/batch.py; docs/SERVER.md, "Fidelity").
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections import Counter, deque
from collections.abc import Callable, Hashable
from concurrent.futures import Future, InvalidStateError
from dataclasses import dataclass, field
from typing import Any, Protocol

from app.runtime.counters import Dropped, Load
from app.runtime.errors import Abandoned
from app.runtime.scheduler import INTERACTIVE, admit, pool_room, shards

# How long one turn of stepped decoding runs (`step_turn`) before queued work gets its turn: many
# decoding steps, so the lanes are not handed over and back at every step
STEP_SLICE_S = 0.02
# How long a lane steps one pool in a row while no sentence waits to join it: a few steps of one model
# per hand-over, the others' steps following within that
STEP_BURST_S = 0.003


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
    client: str = ""  # who asked: sentences join their pool in turns between clients (scheduler.py)


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
        settle([future for future, _ in self.waiters], result)


def settle(futures: list[Future], result: Any) -> None:
    """Each of `futures` given `result`, or raising it when it is an exception; one cancelled
    meanwhile by its reader is left as it is."""
    for future in futures:
        with contextlib.suppress(InvalidStateError):
            if isinstance(result, BaseException):
                future.set_exception(result)
            else:
                future.set_result(result)


class SteppedDecoding:
    """The model thread's stepped decoding: the pools, the sentences joining them, and the turns that
    step them. The model thread owns one (`ModelThread.stepped`) and lends it what a step turn needs,
    and nothing else: its lock, a way to queue a turn, its lanes, and when the pause running now
    ends."""

    def __init__(self, *, lock: threading.Condition, queue_turn: Callable[..., None],
                 together: Callable[[list[Callable[[], None]]], None], pause_ends: Callable[[], float | None],
                 queued: Callable[[], None], lanes: int, pool_rows: int, load: Load, dropped: Dropped):
        """lock: the model thread's, held around every change to the pools; queue_turn(priority, turn,
        futures): a turn for the model thread; together(tasks): tasks run on the lanes; pause_ends():
        when the long job's pause running now ends (None: none runs); queued(): called under the
        lock once a step turn is queued (a long job's step holding the thread: a side lane takes
        it)."""
        self._ready = lock
        self._queue_turn, self._together = queue_turn, together
        self._pause_ends, self._queued = pause_ends, queued
        self.lanes, self.pool_rows = lanes, pool_rows
        self.load, self.dropped = load, dropped
        # pools and the sentences in them by (group, shard): while fewer groups have work than there
        # are lanes, a group's sentences are shared out over a pool per free lane, so that one model
        # can be stepped on every core (`_shards`); joining, by group; whether a step turn is queued
        # or running
        self._pools: dict[tuple[Hashable, int], Pool] = {}
        self._live: dict[tuple[Hashable, int], dict[Hashable, _Sentence]] = {}
        self._joining: dict[Hashable, dict[Hashable, _Sentence]] = {}
        self._stepping = False
        self._closed = False
        self._rotation: deque[Hashable] = deque()  # groups in the order their next steps come

    def waiting(self) -> list[tuple[str, float]]:
        """Under the lock: (client, arrival) of every sentence not yet stepped."""
        return [(s.spec.client, s.arrived) for group in self._joining.values() for s in group.values()]

    def idle(self) -> bool:
        """No sentence joining and none in a pool."""
        with self._ready:
            return not self._joining and not any(self._live.values())

    def close(self) -> list[Future]:
        """Under the lock: take no more sentences; the Futures of those joining or stepped (to cancel)."""
        self._closed = True
        return [future for sentences in [*self._joining.values(), *self._live.values()]
                for sentence in sentences.values() for future, _ in sentence.waiters]

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
                self._queue_turn(INTERACTIVE, self.step_turn, [])
                self._queued()
        return future

    def step_turn(self, one_lane: bool = False) -> None:
        """Decoding steps of every pool, for about STEP_SLICE_S: each lane takes the group stepped
        longest ago, lets its new sentences join, takes one step, and puts it back, so no lane waits
        for another between steps and a group's steps follow each other as closely as the lanes
        allow. Queued again while any pool has sentences, so other work comes between two slices.
        `one_lane`: on the calling thread alone (a side lane's, ModelThread's `_side_steps`)."""
        with self.load.turn(beside=one_lane):
            until = time.perf_counter() + STEP_SLICE_S
            if (ends := self._pause_ends()) is not None:  # inside a long job's pause: no longer than it gives
                until = min(until, ends)
            order = self._rotation  # the groups not stepped in the last slice come first in this one
            busy: set[Hashable] = set()
            taken: list[bool] = []
            lock = threading.Lock()

            def take() -> tuple | None:
                with lock, self._ready:
                    pools = self._shards()
                    for unit in [*self._pools, *((g, shard) for g in self._joining for shard in range(pools))]:
                        if (unit not in busy and unit not in order
                                and (self._pools.get(unit) or unit[0] in self._joining)):
                            order.append(unit)  # every pool with work, once
                    if not order or (taken and time.perf_counter() >= until):  # one step at least
                        return None
                    taken.append(True)
                    unit = order.popleft()
                    busy.add(unit)
                    joining, gone = self._admitted(unit, pools)
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
                if one_lane:
                    lane()
                else:
                    self._together([lane] * max(1, min(self.lanes, pools)))
            finally:
                with self._ready:
                    self._stepping = not self._closed and bool(self._joining or any(self._pools.values()))
                    if self._stepping:
                        self._queue_turn(INTERACTIVE, self.step_turn, [])

    def _shards(self) -> int:
        """Under the lock: the pools a group's new sentences are shared out over, one per lane while
        fewer groups than lanes have work (one model typed into by many readers: every core steps
        it), else one (the groups themselves keep the lanes busy, each in bigger steps)."""
        groups = {unit[0] for unit, pool in self._pools.items() if pool} | set(self._joining)
        return shards(len(groups), self.lanes)

    def _admitted(self, unit: tuple[Hashable, int], pools: int) -> tuple[list[_Sentence], list[_Sentence]]:
        """Under the lock: the sentences of `unit`'s group that join its pool now, in turns between
        clients (each one's oldest first: `fair_order`), as many as it has room for (at most
        `pool_rows`, and its share of the group's sentences over its `pools` pools), and those
        nobody wants any more, dropped unstarted; the rest wait, and a reader who types on in the
        meantime costs nothing."""
        group = unit[0]
        waiting = self._joining.get(group, {})
        if unit[1] >= pools:  # a pool left from when fewer groups had work: it only drains
            return [], []
        sizes = [len(self._pools.get((group, shard)) or ()) for shard in range(pools)]
        room = pool_room(sizes, len(waiting), len(self._pools.get(unit) or ()), self.pool_rows)
        held = Counter(s.spec.client for s in self._live.get(unit, {}).values())
        joining, gone = admit(list(waiting.values()), room, _Sentence.wanted, lambda s: s.spec.client, held)
        for sentence in (*joining, *gone):
            del waiting[sentence.spec.key]
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
            for sentence in joining:
                live[sentence.spec.key] = sentence
                self.load.waited(sentence.spec.model, now - sentence.arrived)
            try:
                pool = self._pools.get(group) or self._pools.setdefault(group, joining[0].spec.pool())
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
