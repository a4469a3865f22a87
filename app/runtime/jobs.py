"""Model work for requests: answered from the result cache when it can be, else queued for the
one model thread (app/runtime/model_thread.py), alone or as a batch side by side.

Work nobody waits for yet (`Jobs.behind_readers`: the default sentence's answers computed at
start-up, app/services/ahead.py) is queued as the least urgent (EXPERIMENT) and never stepped with
the readers' sentences, so a reader's request goes before it, and admission, which counts only more
urgent work (`ModelThread.waited`), never turns a reader away for it.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import Iterator
from concurrent.futures import Future
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Any

from app.runtime.cache import MISSING, ResultCache
from app.runtime.model_thread import ModelThread
from app.runtime.scheduler import EXPERIMENT, INTERACTIVE, ORDINARY, asking
from app.runtime.shares import Meter
from app.runtime.stepped_decoding import Batchable
from app.runtime.stepper_client import Steppers


@dataclass
class Jobs:
    thread: ModelThread = field(default_factory=ModelThread)  # runs every model call
    cache: ResultCache = field(default_factory=lambda: ResultCache(256))
    # name -> seconds per source piece that its batch jobs took lately (a running mean): what
    # submit_together orders a batch by. Per piece, because a batch's models share one text, while
    # the text of each model's last job was any length (live typing: every prefix, most aborted).
    seconds: dict[str, float] = field(default_factory=dict)
    # processes that step readers' sentences (app/runtime/stepper_client.py); None: the model thread does
    steppers: Steppers | None = None
    # set on a thread inside `behind_readers`
    _behind: threading.local = field(default_factory=threading.local, repr=False)

    @contextlib.contextmanager
    def behind_readers(self) -> Iterator[None]:
        """Work queued from this thread meanwhile waits behind every reader's (see the module's
        docstring)."""
        self._behind.on = True
        try:
            yield
        finally:
            self._behind.on = False

    def _priority(self, priority: int) -> int:
        return EXPERIMENT if getattr(self._behind, "on", False) else priority

    def result(self, key, compute, cancel: threading.Event | None = None, priority: int = ORDINARY,
               meter: Meter | None = None):
        """The cached answer for `key`, else `compute()` run on the model thread and cached. The
        cache is asked again there: an identical request queued behind the one that computed it
        (live typing asks twice for the same text) gets the answer without computing it again.
        `cancel` set before its turn: nothing is computed (errors.Abandoned). `priority`: its place in
        the model thread's queue (scheduler.INTERACTIVE, ORDINARY or EXPERIMENT). `meter`: gets the
        model thread's seconds that compute() took, if it ran (the time its pauses gave other work
        left out), also when it failed or stopped halfway."""
        if meter is not None:
            compute = partial(self._metered, compute, meter)
        return self.submit(key, compute, cancel, priority).result()

    def _metered(self, compute, meter: Meter):
        began, lent = time.perf_counter(), self.thread.lent()
        try:
            return compute()
        finally:
            meter.add(time.perf_counter() - began - (self.thread.lent() - lent))

    async def answer(self, key, compute, cancel: threading.Event | None = None, priority: int = ORDINARY):
        """`result` for a coroutine: the event loop waits for the model thread without holding a
        thread of its own (a sync route costs two hand-overs to the thread pool and back)."""
        return await asyncio.wrap_future(self.submit(key, compute, cancel, priority))

    def submit(self, key, compute, cancel: threading.Event | None = None, priority: int = ORDINARY) -> Future:
        """Like `result`, without waiting: a Future, already done when the cache had the answer."""
        value = self.cache.get(key)
        if value is MISSING:
            return self.thread.submit(self.cache.get_or_compute, key, compute, cancel=cancel,
                                      priority=self._priority(priority), client=asking.get())
        done: Future = Future()
        done.set_result(value)
        return done

    def submit_together(self, items: list[tuple[str, Any, Any, Batchable | None]],
                        cancel: threading.Event | None = None, pieces: int = 1) -> list[Future]:
        """Like `submit` for several (model name, key, compute, Batchable or None) of independent
        work that only reads the loaded models, all on one text of `pieces` source pieces. The ones
        not cached with a Batchable are stepped with other readers' sentences of their model (in a
        stepper process when the server has them, else by the model thread's step_together); the
        others run as one batch on every core (ModelThread.run_together), ahead of everything else
        queued (INTERACTIVE: typing asks for these), the slowest per piece lately first (longest
        first keeps the lanes evenly busy). Inside `behind_readers`, all of them run as that batch,
        behind everything else."""
        futures: list[Future | None] = []
        todo, names = [], []
        priority = self._priority(INTERACTIVE)
        client = asking.get()  # whose work this is: served in turns with other clients'
        for name, key, compute, spec in items:
            value = self.cache.get(key)
            if value is not MISSING:
                futures.append(Future())
                futures[-1].set_result(value)
            elif spec is not None and self.thread.batching and priority == INTERACTIVE:
                spec = replace(spec, client=client)
                remote = self.steppers.step_together(spec, cancel) if self.steppers is not None else None
                futures.append(remote or self.thread.step_together(spec, cancel))
                futures[-1].add_done_callback(partial(self._cache_answer, key))
            else:
                futures.append(None)
                timed = partial(self._timed, name, pieces, compute)
                todo.append(partial(self.cache.get_or_compute, key, timed))
                names.append(name)
        start = sorted(range(len(todo)), key=lambda i: -self.seconds.get(names[i], 0.0))
        queued = iter(self.thread.run_together(todo, cancel, start, priority=priority, client=client)
                      if todo else [])
        return [future or next(queued) for future in futures]

    def ages(self) -> dict[str, float]:
        """Per client with model work waiting (on the model thread or in a stepper process), how long
        its oldest has waited: what admission refuses by (app/admission.py)."""
        ages = self.thread.ages()
        for client, age in (self.steppers.ages() if self.steppers is not None else {}).items():
            ages[client] = max(age, ages.get(client, 0.0))
        return ages

    def close(self) -> None:
        """Stop the stepper processes, then the model thread; queued work that has not started is dropped."""
        if self.steppers is not None:
            self.steppers.close()
        self.thread.close()

    def _cache_answer(self, key, future: Future) -> None:
        """A stepped answer into the cache (nothing for one that was cancelled or failed)."""
        if not future.cancelled() and future.exception() is None:
            self.cache.get_or_compute(key, future.result)

    def _timed(self, name: str, pieces: int, compute):
        """compute(), timed into `seconds` (only when it runs: an answer from the cache is no time)."""
        began = time.perf_counter()
        value = compute()
        rate = (time.perf_counter() - began) / max(pieces, 1)
        before = self.seconds.get(name)
        self.seconds[name] = rate if before is None else (before + rate) / 2
        return value
