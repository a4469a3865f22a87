"""uvicorn's h11 protocol with a deadline on each request's head, for `--http app.serving:H11`.

uvicorn closes a connection that stays idle after an answer (--timeout-keep-alive), but not one
that sends its request line and headers a byte at a time: ~20,000 such connections exhaust the
file limit while each looks busy. Here a client has `header_timeout` seconds (Settings,
ATTENTION_LAB_HEADER_TIMEOUT) from connecting, and again from each answer, to send a whole head;
then the connection is closed. Bodies are bounded (size and time) by app/guard.py, connections by
--limit-concurrency.
"""

from __future__ import annotations

import asyncio

from uvicorn.protocols.http.h11_impl import H11Protocol

from app.config import get_settings


class H11(H11Protocol):
    header_timeout: float | None = None  # None: the settings' (read at the first connection)
    _deadline: asyncio.TimerHandle | None = None

    def connection_made(self, transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm()

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        if not self._waiting_for_head():
            self._disarm()  # a whole head arrived: the request runs as long as it takes

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if not self.transport.is_closing():
            self._arm()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def _waiting_for_head(self) -> bool:
        return self.cycle is None or self.cycle.response_complete

    def _arm(self) -> None:
        self._disarm()
        timeout = self.header_timeout if self.header_timeout is not None else get_settings().header_timeout
        self._deadline = self.loop.call_later(timeout, self._too_slow)

    def _disarm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _too_slow(self) -> None:
        self._deadline = None
        if self._waiting_for_head() and not self.transport.is_closing():
            self.transport.close()
