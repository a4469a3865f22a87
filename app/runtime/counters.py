"""What the model thread's work amounts to, counted as it runs: the work nobody wanted any more
(`Dropped`, shown by GET /api/health) and its load (`Load`, for GET /metrics)."""

from __future__ import annotations

import contextlib
import threading
import time
from collections import Counter

from app.runtime.errors import Abandoned
from models.decoding import Stopped


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
    def turn(self, beside: bool = False):
        """Around one turn of the model thread, from its start to its end; `beside`: one a side lane
        runs while the model thread runs a long job's step (neither a pause's turn nor the model
        thread's time)."""
        with self._lock:
            self.waiting -= 1
            if not beside:
                self._depth += 1
                self.paused += self._depth > 1
        began = time.perf_counter()
        try:
            yield
        finally:
            with self._lock:
                if not beside:
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

