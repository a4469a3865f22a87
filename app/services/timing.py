"""POST /api/timing and GET /api/timing/status as functions: the parallel chapter's timing probe
(models/probes/timing.py) on a recurrent (LSTM) encoder against one that attends over every position
(the Transformer's), each chosen by what it has inside: the request may name them, else the first
loaded model of each kind in the catalogue's order.

A measurement takes seconds, so it is bounded: one at a time per server (a second is refused with
BusyError, HTTP 429), at most LIMIT_S seconds (no repeat starts after that), and each result is
kept per device and lengths, so asking again answers at once. Every timed call runs on the model
thread, one call per job: other requests wait at most one call, never a whole measurement, and
no call shares the cores with other model work.
"""

from __future__ import annotations

import math
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from datetime import UTC, datetime

import torch

from app.limits import MAX_TIMING_LENGTH, MAX_TIMING_LENGTHS
from app.runtime.errors import BusyError, InvalidOptionError
from app.runtime.registry import LoadedModel, ModelRegistry
from app.schemas.timing import EncoderSize, LengthTiming, TimingRoles, Timings, TimingStatus
from app.services.inference import pick_model
from app.services.language import Words
from app.services.rounding import round_sig
from models.probes.timing import LENGTHS, device_name, encoder_size, measure, random_ids, time_encode

LIMIT_S = 20.0  # no repeat starts after this many seconds
REPEATS = 7  # at most, per model and length
MAX_LENGTH, MAX_LENGTHS = MAX_TIMING_LENGTH, MAX_TIMING_LENGTHS  # longest input in pieces; lengths per request
KEPT = 16  # results kept (per device and lengths), the oldest dropped first
DEFINITION = (f"median wall time of one model.encode(ids) call (the encoder, and for the Transformer the "
              f"projection of the source's keys and values for its decoder layers, which encode includes; "
              f"batch 1, under "
              f"torch.inference_mode, a GPU synchronised before and after) on random ordinary piece ids "
              f"(fixed seed per length, the same for both models); one untimed warm-up call per model at "
              f"the shortest and the longest length, then passes over every length, the models side by "
              f"side, up to {REPEATS} repeats, no pass started after the time limit (the first always "
              f"runs in full)")


class TimingBench:
    """One per server (see `bench`): the one-at-a-time lock, the kept results, the progress."""

    def __init__(self, limit_s: float = LIMIT_S, repeats: int = REPEATS):
        self.limit_s, self.repeats = limit_s, repeats
        self._lock = threading.Lock()
        # the kept results have a lock of their own: a reader must never find a key evicted between
        # looking and reading, and never waits for a measurement (which holds _lock for seconds)
        self._kept = threading.Lock()
        self._results: OrderedDict[tuple, Timings] = OrderedDict()
        self._started: float | None = None  # time.monotonic() of the running measurement
        self._done, self._total = 0, 0

    def status(self) -> TimingStatus:
        started = self._started
        running = started is not None
        return TimingStatus(running=running, done=self._done, total=self._total, limit_s=self.limit_s,
                            elapsed_s=round(time.monotonic() - started, 1) if running else None)

    def timing(self, registry: ModelRegistry, lengths: list[int] | None = None, refresh: bool = False,
               recurrent: str | None = None, parallel: str | None = None,
               admit: Callable[[], None] | None = None) -> Timings:
        """The kept result for the server's device, these lengths (default LENGTHS) and models, else
        (or with `refresh`) a new measurement; BusyError while another one runs. `admit()` is called
        as a measurement is about to start (and may refuse it by raising): a kept result never
        calls it."""
        chosen = check_lengths(lengths)
        entries = compared(registry, recurrent, parallel)
        key = (str(registry.device), chosen, tuple(entries))
        if not refresh and (kept := self._kept_result(key)) is not None:
            return kept
        if not self._lock.acquire(blocking=False):
            raise BusyError("a timing measurement is running (GET /api/timing/status shows its progress)",
                            self._retry_after())
        try:
            if not refresh and (kept := self._kept_result(key)) is not None:  # measured while it waited
                return kept
            if admit is not None:
                admit()
            self._started, self._done, self._total = time.monotonic(), 0, 0
            result = self._measure(registry, {n: e.model for n, e in entries.items()}, chosen)
            self._keep(key, result)
            return result
        finally:
            self._started = None
            self._lock.release()

    def _kept_result(self, key: tuple) -> Timings | None:
        with self._kept:
            return self._results.get(key)

    def _keep(self, key: tuple, result: Timings) -> None:
        """Keep `result`, dropping the oldest past KEPT."""
        with self._kept:
            self._results[key] = result
            while len(self._results) > KEPT:
                self._results.popitem(last=False)

    def _measure(self, registry: ModelRegistry, models: dict, lengths: tuple[int, ...]) -> Timings:
        """`models`: {recurrent name: model, parallel name: model}, in that order."""
        vocab = min(m.config.vocab_size for m in models.values())
        worker = registry.jobs.thread
        ids = worker.run(lambda: {n: random_ids(n, vocab, registry.device) for n in lengths})
        threads = worker.run(torch.get_num_threads)  # the model thread's count now, kept throughout

        def run(name: str, length: int) -> float:
            return worker.run(time_encode, models[name], ids[length], threads)

        start = time.monotonic()
        timings = measure(run, list(models), lengths, self.repeats, self.limit_s, progress=self._progress)
        seconds = time.monotonic() - start
        median = {name: {t.length: t.median_ms for t in rows} for name, rows in timings.items()}
        short, long = lengths[0], lengths[-1]
        recurrent, parallel = list(models)
        slow, fast = median[recurrent], median[parallel]
        sizes = {name: EncoderSize(**encoder_size(model)) for name, model in models.items()}
        return Timings(
            device=registry.device.type, device_name=device_name(registry.device), torch_threads=threads,
            measured_at=datetime.now(UTC).isoformat(timespec="seconds"), seconds=round(seconds, 2),
            limit_s=self.limit_s, max_repeats=self.repeats,
            complete=all(t.repeats == self.repeats for rows in timings.values() for t in rows),
            definition=DEFINITION, lengths=list(lengths),
            roles=TimingRoles(recurrent=recurrent, parallel=parallel),
            encoders={name: describe(sizes[name]) for name in models}, encoder_sizes=sizes,
            timings={name: [LengthTiming(length=t.length, median_ms=round_sig(t.median_ms), repeats=t.repeats)
                            for t in rows] for name, rows in timings.items()},
            growth={name: round_sig(m[long] / m[short]) for name, m in median.items()},
            parallel_longest_over_recurrent_shortest=round_sig(fast[long] / slow[short]),
            recurrent_over_parallel_longest=round_sig(slow[long] / fast[long]),
        )

    def _progress(self, done: int, total: int) -> None:
        self._done, self._total = done, total

    def _retry_after(self) -> int:
        started = self._started
        left = self.limit_s if started is None else self.limit_s - (time.monotonic() - started)
        return max(1, math.ceil(left))


def compared(registry: ModelRegistry, recurrent: str | None, parallel: str | None) -> dict[str, LoadedModel]:
    """The two encoders the chapter times, {name: entry}, recurrent first: `recurrent` must read
    through an LSTM (gated recurrence), `parallel` attend without recurrence; None: the first loaded
    of each kind (none loaded: 404)."""
    chosen = {}
    for field, name, fits, what in (
            ("recurrent", recurrent, lambda e: e.capabilities.recurrent and e.capabilities.gates,
             "a model with an LSTM encoder"),
            ("parallel", parallel, lambda e: not e.capabilities.recurrent, "a model without recurrence")):
        try:
            entry = pick_model(registry, name, fits, what)
        except InvalidOptionError as error:
            raise InvalidOptionError(field, str(error)) from error
        chosen[entry.name] = entry
    return chosen


def check_lengths(lengths: list[int] | None) -> tuple[int, ...]:
    """Distinct lengths, ascending: 2 to MAX_LENGTHS of them, each 1 to MAX_LENGTH."""
    if lengths is None:
        return LENGTHS
    chosen = tuple(sorted(set(lengths)))
    if not 2 <= len(chosen) <= MAX_LENGTHS:
        raise InvalidOptionError("lengths", f"give 2 to {MAX_LENGTHS} different lengths, got {len(chosen)}")
    if not 1 <= chosen[0] <= chosen[-1] <= MAX_LENGTH:
        raise InvalidOptionError("lengths", f"each length must be 1 to {MAX_LENGTH}, got {list(chosen)}")
    return chosen


def bench(registry: ModelRegistry) -> TimingBench:
    """The server's bench, kept with its registry (so each test's registry has its own)."""
    return registry.experiments.setdefault("timing", TimingBench())


def describe(size: EncoderSize, words: Words | None = None) -> str:
    """An encoder's size in a sentence: the catalogue's message the page phrases it with (English
    for the API's `encoders`)."""
    words = words or Words("en")
    numbers = {name: str(value) for name, value in size.model_dump().items() if isinstance(value, int)}
    if size.heads is not None:  # an encoder of heads, not of cells: the page's test too (timing.js)
        return words.text("parallel.timing.encoder-size.transformer", **numbers)
    return words.text("parallel.timing.encoder-size.recurrent", cell=size.cell.upper(), count=size.layers,
                      **numbers)
