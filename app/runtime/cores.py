"""How many cores the next model call may use: all of them while nothing else wants the CPU, one
while other programs are kept waiting for it.

Splitting a request over both cores of a 2-core machine makes it faster when the machine is
otherwise quiet (the big output projections are memory-bound, and each core brings its own
bandwidth). But the threads of a split operation wait for each other at its end, so when another
program holds one of the cores (the reader's own browser drawing the page, on a laptop running
`make serve`), every split operation waits for a thread that is not running, and the page's
keystroke -> update (bench/bench_page.py) is slower with two threads than with one
(docs/SERVER.md).

The signal is Linux's CPU pressure (/proc/pressure/cpu, "some"): the share of wall time during
which some runnable task was waiting for a core. Without it (other systems, old kernels), every
core is used.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

PRESSURE = Path("/proc/pressure/cpu")
BUSY = 0.3  # more than this share of the time with a task waiting: the CPU is contended
WINDOW_S = 0.1  # pressure is measured over at least this long


def cpu_stall_us(path: Path = PRESSURE) -> int | None:
    """Microseconds, since boot, during which some task waited for a CPU; None if unknown."""
    try:
        for line in path.read_text().splitlines():
            if line.startswith("some "):
                return int(line.rpartition("total=")[2])
    except (OSError, ValueError):
        return None
    return None


class CoreShare:
    def __init__(self, cores: int, stall: Callable[[], int | None] = cpu_stall_us,
                 clock: Callable[[], float] = time.monotonic):
        self.cores = cores
        self._stall, self._clock = stall, clock
        self._since = (clock(), stall())
        self.contended = False

    def threads(self) -> int:
        """Intra-op threads for the call about to run."""
        if self.cores <= 1:
            return self.cores
        now = self._clock()
        then, stall_then = self._since
        if now - then >= WINDOW_S:  # the pressure file is read at most once per window
            stall = self._stall()
            if stall is None or stall_then is None:
                self.contended = False
            else:
                self.contended = (stall - stall_then) / ((now - then) * 1e6) > BUSY
            self._since = (now, stall)
        return 1 if self.contended else self.cores
