"""Each client's share of the expensive experiments: a budget of asks per moving window, counted by
the `limits` package, per client address and per experiment.

The counters live in this process by default (one replica), or in Redis when a URL is set
(ATTENTION_LAB_REDIS_URL), so that every replica counts against the same budget. A Redis that cannot
be reached does not fail the request: the replica counts in its own memory until Redis answers again
(each replica then grants the whole budget on its own, which is never less than one replica's share),
and logs that it does.

A spent budget is ShareSpentError (429): Retry-After, and the IETF draft's RateLimit-Policy and
RateLimit headers (draft-ietf-httpapi-ratelimit-headers), e.g.
    RateLimit-Policy: "train";q=2;w=600
    RateLimit: "train";r=0;t=540
"""

from __future__ import annotations

import logging
import math
import time
from dataclasses import dataclass

from limits import RateLimitItem, parse
from limits.storage import MemoryStorage, Storage, storage_from_string
from limits.strategies import MovingWindowRateLimiter

from app.runtime.errors import BusyError

log = logging.getLogger("attention_lab")
REDIS_TIMEOUT_S = 0.5  # a Redis that does not answer within this is taken as down for this ask
RETRY_REMOTE_S = 5.0  # after a failure, asks count locally this long before Redis is tried again


@dataclass(frozen=True)
class Quota:
    """What one share tells: budget `quota` asks per `window_s` seconds, `remaining` left, the window
    frees an ask in `reset_s` seconds."""

    name: str
    quota: int
    window_s: int
    remaining: int
    reset_s: int

    def headers(self) -> dict[str, str]:
        return {"RateLimit-Policy": f'"{self.name}";q={self.quota};w={self.window_s}',
                "RateLimit": f'"{self.name}";r={self.remaining};t={self.reset_s}'}


class ShareSpentError(BusyError):
    """429: this client has used its share of one experiment; the headers say the budget and when
    the next ask is free."""

    def __init__(self, quota: Quota):
        what = f"your share of {quota.name} ({quota.quota} per {quota.window_s} s) is used"
        super().__init__(what, max(1, quota.reset_s))
        self.headers = quota.headers()


class Shares:
    """The budgets (name -> limits' notation, e.g. {"train": "2/10 minutes"}) and their counters."""

    def __init__(self, budgets: dict[str, str], redis_url: str | None = None):
        self.items: dict[str, RateLimitItem] = {name: parse(text) for name, text in budgets.items()}
        self.local = MovingWindowRateLimiter(MemoryStorage())
        self.remote: MovingWindowRateLimiter | None = None
        self.remote_errors: tuple[type[Exception], ...] = ()
        self.local_until = 0.0  # monotonic time before which Redis is not tried again
        if redis_url:
            storage: Storage = storage_from_string(redis_url, socket_timeout=REDIS_TIMEOUT_S,
                                                   socket_connect_timeout=REDIS_TIMEOUT_S)
            self.remote = MovingWindowRateLimiter(storage)
            base = storage.base_exceptions
            self.remote_errors = tuple(base) if isinstance(base, tuple | list) else (base,)

    def take(self, name: str, client: str) -> Quota:
        """Spend one of `client`'s asks of `name` (ShareSpentError when none is left)."""
        item = self.items[name]
        limiter = self._limiter()
        try:
            granted = limiter.hit(item, name, client)
            stats = limiter.get_window_stats(item, name, client)
        except self.remote_errors as error:
            log.warning("shares: Redis unreachable (%s); counting on this replica for %.0f s",
                        error, RETRY_REMOTE_S)
            self.local_until = time.monotonic() + RETRY_REMOTE_S
            return self.take(name, client)
        quota = Quota(name, item.amount, item.get_expiry(), stats.remaining,
                      max(0, math.ceil(stats.reset_time - time.time())))
        if not granted:
            raise ShareSpentError(quota)
        return quota

    def _limiter(self) -> MovingWindowRateLimiter:
        if self.remote is not None and time.monotonic() >= self.local_until:
            return self.remote
        return self.local
