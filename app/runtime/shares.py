"""Each client's share of the expensive experiments: a bucket per client and share that holds at most
`amount` units and empties at `amount` per `window`, charged with what the client's work cost once
it has run (docs/SERVER.md, "Open-network defences", says why these budgets).

A unit is a share's own: an ask (a training run, a timing measurement) or a second of the model
thread's time (the gradients chapter's experiments, which cost from 0.01 s to 15 s an ask by text and
length, so counting asks would either stop a reader or let a script take the thread). A client may
start work while its bucket has room (`check`); the work's cost is added after it ran (`charge`),
so what was refused, superseded or abandoned before it began costs nothing, and the bucket may go
over by one ask's cost, which the next asks then wait out. Over any `T` seconds one client takes at
most `amount + amount * T / window` units: the rate, plus one bucket.

The buckets live in this process (`Ledger`: bounded, and a bucket that has emptied is forgotten), or
in Redis when a URL is set (ATTENTION_LAB_REDIS_URL), so that every replica counts against the same
budget: one round trip a check or a charge (a Lua script on Redis's own clock, the key expiring
when its bucket empties), with explicit timeouts, and never on the event loop (`ClientShare` runs it
in a thread). A Redis that cannot be reached does not fail the request: the replica counts in its
own memory until Redis answers again (each replica then grants the whole budget on its own), and
logs that it does.

Every answer of a shared route carries the IETF draft's RateLimit-Policy and RateLimit headers
(draft-ietf-httpapi-ratelimit-headers), e.g.
    RateLimit-Policy: "train";q=3;w=600
    RateLimit: "train";r=2;t=200
(`q` units per `w` seconds; `r` units left now, `t` seconds until the bucket is empty again). A spent
share is ShareSpentError (429) with Retry-After: the seconds until there is room again.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

from app.limits import Budget
from app.runtime.errors import BusyError

log = logging.getLogger("attention_lab")
REDIS_TIMEOUT_S = 0.5  # a Redis that does not answer within this is taken as down for this ask
RETRY_REMOTE_S = 5.0  # after a failure, asks count locally this long before Redis is tried again
MOST_BUCKETS = 200_000  # buckets kept in memory at most; past it the longest untouched goes first
SWEPT = 1024  # emptied buckets forgotten at most per check or charge: well under a millisecond
KEY_PREFIX = "attention-lab:share"


@dataclass(frozen=True)
class Quota:
    """What one share tells now: `remaining` units of `quota` left, the bucket empty again in
    `reset_s` seconds, room for an ask again in `retry_s` (0: now)."""

    name: str
    quota: int
    window_s: int
    remaining: int
    reset_s: int
    retry_s: int

    @classmethod
    def of(cls, budget: Budget, level: float) -> Quota:
        over = level + budget.need - budget.amount  # > 0: no room for an ask
        left = max(0, math.floor(budget.amount - level + 1e-9))
        empty_in = math.ceil(max(0.0, level) / budget.rate - 1e-9)
        return cls(budget.name, budget.amount, budget.window_s, left, empty_in,
                   math.ceil(over / budget.rate) if over > 1e-9 else 0)

    @property
    def spent(self) -> bool:
        return self.retry_s > 0

    def headers(self) -> dict[str, str]:
        return {"RateLimit-Policy": f'"{self.name}";q={self.quota};w={self.window_s}',
                "RateLimit": f'"{self.name}";r={self.remaining};t={self.reset_s}'}


class Meter:
    """The model thread's seconds one request's work took (`add`ed by the work as it runs, from the
    model thread; read once the work is over)."""

    def __init__(self):
        self.seconds = 0.0
        self.lock = threading.Lock()

    def add(self, seconds: float) -> None:
        with self.lock:
            self.seconds += seconds


class ShareSpentError(BusyError):
    """429: this client has used its share of one experiment; the headers say the budget and when
    there is room again. `share` names it, for a client that words the refusal itself."""

    def __init__(self, quota: Quota, unit: str):
        what = f"your share of {quota.name} ({quota.quota} {unit} per {quota.window_s} s) is used"
        super().__init__(what, quota.retry_s)
        self.share = quota.name
        self.headers = quota.headers()


class Ledger:
    """Buckets in this process's memory, keyed by (share, client): each a level and when it was
    last written. A bucket that has emptied is the same as none, so it is forgotten: up to SWEPT of
    the oldest written at every check or charge (a bounded pause, never a sweep of them all), and
    at most `most` are kept whatever happens (the one forgotten then is the longest untouched, the
    nearest to empty). The table is built again once it holds far fewer than it did, since a dict
    keeps its size when its entries go."""

    def __init__(self, clock: Callable[[], float] = time.monotonic, most: int = MOST_BUCKETS):
        self.clock = clock
        self.most = most
        # (share, client) -> (level, when it was written, the rate it empties by)
        self.buckets: OrderedDict[tuple[str, str], tuple[float, float, float]] = OrderedDict()
        self.peak = 0  # the most buckets held since the table was last built
        self.lock = threading.Lock()  # charges come from the thread pool's threads

    def level(self, key: tuple[str, str], rate: float) -> float:
        with self.lock:
            now = self.clock()
            self._sweep(now)
            return self._level(key, now)

    def charge(self, key: tuple[str, str], rate: float, cost: float) -> float:
        with self.lock:
            now = self.clock()
            level = self._level(key, now) + cost
            self.buckets[key] = (level, now, rate)
            self.buckets.move_to_end(key)
            while len(self.buckets) > self.most:
                self.buckets.popitem(last=False)
            self.peak = max(self.peak, len(self.buckets))
            self._sweep(now)
            return level

    def _level(self, key: tuple[str, str], now: float) -> float:
        bucket = self.buckets.get(key)
        if bucket is None:
            return 0.0
        level, at, rate = bucket
        return max(0.0, level - (now - at) * rate)

    def _sweep(self, now: float) -> None:
        """Forget emptied buckets among the SWEPT written longest ago, stopping at the first that
        still holds something (a bucket holds at most its amount and one ask's cost, so it empties
        within about a window of its last charge: none holds the sweep up for long)."""
        for _ in range(min(SWEPT, len(self.buckets))):
            key, (level, at, rate) = next(iter(self.buckets.items()))
            if level - (now - at) * rate > 0:
                break
            del self.buckets[key]
        if self.peak > SWEPT and len(self.buckets) * 8 < self.peak:
            self.buckets = OrderedDict(self.buckets)
            self.peak = len(self.buckets)


# KEYS[1]: the bucket; ARGV: rate (units per second), cost (0: only read). The level and its time
# as Redis's own clock gives them, so that replicas whose clocks differ agree; the key expires once
# the bucket is empty. Returns the level after the charge, as a string (Lua numbers are truncated).
LEVEL_SCRIPT = """
if redis.replicate_commands then redis.replicate_commands() end
local rate, cost = tonumber(ARGV[1]), tonumber(ARGV[2])
local clock = redis.call('TIME')
local now = tonumber(clock[1]) + tonumber(clock[2]) / 1e6
local kept = redis.call('HMGET', KEYS[1], 'level', 'at')
local level = 0
if kept[1] then level = math.max(0, tonumber(kept[1]) - (now - tonumber(kept[2])) * rate) end
if cost > 0 then
  level = level + cost
  redis.call('HSET', KEYS[1], 'level', tostring(level), 'at', tostring(now))
  redis.call('PEXPIRE', KEYS[1], math.ceil(level / rate * 1000) + 1000)
end
return tostring(level)
"""


class RedisLedger:
    """The buckets in Redis, one round trip each (LEVEL_SCRIPT), within REDIS_TIMEOUT_S."""

    def __init__(self, url: str):
        import redis  # only where a Redis is configured

        self.client = redis.Redis.from_url(url, socket_timeout=REDIS_TIMEOUT_S,
                                           socket_connect_timeout=REDIS_TIMEOUT_S, retry_on_timeout=False)
        self.script = self.client.register_script(LEVEL_SCRIPT)
        self.errors: tuple[type[Exception], ...] = (redis.RedisError, OSError)

    def level(self, key: tuple[str, str], rate: float) -> float:
        return self.charge(key, rate, 0.0)

    def charge(self, key: tuple[str, str], rate: float, cost: float) -> float:
        return float(self.script(keys=[f"{KEY_PREFIX}:{key[0]}:{key[1]}"], args=[repr(rate), repr(cost)]))


class Shares:
    """The budgets and their buckets: `check` before the work, `charge` after it."""

    def __init__(self, budgets: dict[str, Budget], redis_url: str | None = None,
                 clock: Callable[[], float] = time.monotonic):
        self.budgets = budgets
        self.local = Ledger(clock)
        self.remote = RedisLedger(redis_url) if redis_url else None
        self.local_until = 0.0  # monotonic time before which Redis is not tried again

    def check(self, name: str, client: str) -> Quota:
        """The client's share of `name` now (nothing spent)."""
        budget = self.budgets[name]
        return Quota.of(budget, self._ask(lambda ledger: ledger.level((name, client), budget.rate)))

    def charge(self, name: str, client: str, cost: float) -> Quota:
        """Add what the client's work cost to its bucket; the share after it."""
        budget = self.budgets[name]
        if cost <= 0:
            return self.check(name, client)
        return Quota.of(budget, self._ask(lambda ledger: ledger.charge((name, client), budget.rate, cost)))

    def take(self, name: str, client: str, cost: float = 1.0) -> Quota:
        """Check, then charge `cost` at once (ShareSpentError when there is no room)."""
        quota = self.check(name, client)
        if quota.spent:
            raise ShareSpentError(quota, self.budgets[name].unit)
        return self.charge(name, client, cost)

    @property
    def blocking(self) -> bool:
        """Whether a check or charge may wait on the network (then: not on the event loop)."""
        return self.remote is not None

    def _ask(self, ask: Callable[[Ledger | RedisLedger], float]) -> float:
        if self.remote is not None and time.monotonic() >= self.local_until:
            try:
                return ask(self.remote)
            except self.remote.errors as error:
                log.warning("shares: Redis unreachable (%s); counting on this replica for %.0f s",
                            error, RETRY_REMOTE_S)
                self.local_until = time.monotonic() + RETRY_REMOTE_S
        return ask(self.local)
