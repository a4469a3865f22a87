"""Fair by client, where work waits: what the model thread's queue (`FairShare`) and a pool's joining
sentences (`fair_order`) are ordered by, so that one client with many requests gets its share of the
thread and no more, and a reader beside it waits about one turn of each other client, not behind
everything that client has asked. Pure: the caller gives the clock's reading (tests are exact)."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable
from contextvars import ContextVar
from typing import TypeVar

T = TypeVar("T")
FIRST_COST_S = 0.005  # a client's turn before any of its turns has been timed
REMEMBERED = 4096  # clients whose accounts are kept at most; an idle one is forgotten first
# Who the request being served is (app/clients.py's name), set by admission (app/admission.py) for
# every model request: the work it queues is that client's, in the model thread's fair turns and in
# the pools' joins. A request's context reaches the thread its handler runs on.
asking: ContextVar[str] = ContextVar("asking", default="")


class FairShare:
    """Per client, when its turns queued so far will be through if each takes as long as its turns
    have lately (virtual finishing times, as weighted fair queuing keeps them, on the thread's own
    clock). A turn is due at its client's `due`: at once for a client with nothing queued, after its
    queued turns for one with many, so turns interleave between clients by the time they take. The
    anonymous client "" (shared work, such as the readers' stepped decoding) is due at once."""

    def __init__(self, remembered: int = REMEMBERED):
        self.through: dict[str, float] = {}  # client -> when its queued turns are through
        self.cost: dict[str, float] = {}  # client -> seconds a turn of its took lately
        self.remembered = remembered

    def due(self, client: str, now: float) -> float:
        if not client:
            return now
        start = max(now, self.through.get(client, now))
        self.through.pop(client, None)  # re-inserted last: the dict's order is by last use
        self.through[client] = start + self.cost.get(client, FIRST_COST_S)
        while len(self.through) > self.remembered:
            forgotten = next(iter(self.through))
            del self.through[forgotten]
            self.cost.pop(forgotten, None)
        return start

    def ran(self, client: str, seconds: float) -> None:
        """A turn of `client` took `seconds`: its next turns are counted as long (a running mean)."""
        if client:
            before = self.cost.get(client)
            self.cost[client] = seconds if before is None else (before + seconds) / 2


def fair_order(items: Iterable[T], client: Callable[[T], Hashable]) -> list[T]:
    """`items` (oldest first) taken round by round: each client's oldest, in the order of their
    oldest, then each one's second, and so on."""
    queues: dict[Hashable, list[T]] = {}
    for item in items:
        queues.setdefault(client(item), []).append(item)
    order: list[T] = []
    depth = 0
    while len(order) < sum(len(q) for q in queues.values()):
        order += [q[depth] for q in queues.values() if depth < len(q)]
        depth += 1
    return order


def wait_met(ages: dict[str, float], client: str) -> float:
    """The wait a new request of `client` would meet, from each client's oldest queued work's age
    (`ages`): its own, since in turns between clients its new work waits behind its own, not behind
    another's; and, where two or more other clients have work queued, the least of their ages, since
    then every client is that far behind (the replica is), not one client alone."""
    others = sorted(age for name, age in ages.items() if name != client)
    return max(ages.get(client, 0.0), others[0] if len(others) >= 2 else 0.0)
