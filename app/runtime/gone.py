"""A request's "nobody wants this answer any more" flag, for the model thread and the event loop.

Set on the event loop when the client hangs up or a newer request with the same X-Supersede-Key
arrives (app/disconnect.py). The model thread reads it between two steps (`is_set`: skip or stop
the work); the event loop can also await it (`ended`), so a stream whose reader has moved on ends
at once and gives back its admission slot (app/admission.py), instead of holding it until its
work's turn comes round in the model thread's queue only to be skipped there.
"""

from __future__ import annotations

import asyncio
import threading


class Gone(threading.Event):
    def __init__(self):
        super().__init__()
        self._waiters: list[asyncio.Future] = []
        self._lock = threading.Lock()

    def set(self) -> None:
        super().set()
        with self._lock:
            waiters, self._waiters = self._waiters, []
        for waiter in waiters:
            waiter.get_loop().call_soon_threadsafe(_settle, waiter)

    def ended(self) -> asyncio.Future:
        """A future of the running loop, done once the flag is set (at once if it is)."""
        waiter = asyncio.get_running_loop().create_future()
        with self._lock:
            if self.is_set():
                waiter.set_result(None)
            else:
                self._waiters.append(waiter)
        return waiter


def _settle(waiter: asyncio.Future) -> None:
    if not waiter.done():
        waiter.set_result(None)
