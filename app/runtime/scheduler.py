"""What runs next, decided in one place. The runners only execute what this decides: the model thread
and its lanes (app/runtime/model_thread.py), the pools it steps (app/runtime/stepped_decoding.py)
and the stepper processes (app/runtime/stepper_client.py); app/runtime/jobs.py only says which
runner a request's work goes to. Pure: no thread, no lock, no clock of its own; a caller passes the
clock's reading (`now`) and holds its own lock, so the tests are exact and instant
(tests/app/runtime/test_scheduler.py).

- Which turn of the model thread runs next (`TurnQueue`): by priority with patience, then fair
  between clients (`FairShare`, weighted fair queuing by the time each client's turns take).
- When a long job's pause gives the thread back to it (`pause_until`): its pauses give urgent work
  as long as its own steps have had.
- Which sentences join a pool (`shards`, `pool_room`, `admit`): round by round between clients
  (`fair_order`), as many as the pool has room for, a model's sentences shared out over a pool per
  lane while fewer models than lanes have work.
- Which stepper process steps a sentence (`homes`, `route`).
- Whose wait admission refuses by (`wait_met`, app/admission.py), the client being `asking`."""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable, Hashable, Iterable, Iterator
from concurrent.futures import Future
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TypeVar

T = TypeVar("T")

# The model thread's priorities, most urgent first: typing's compares; a chapter's request; an
# experiment that takes seconds (the gradients chapter's) or work computed ahead at start-up.
INTERACTIVE, ORDINARY, EXPERIMENT = 0, 1, 2
# How long a queued turn of each priority lets later, more urgent turns go first: it runs before any
# turn queued more than this after it. Without a bound, steady typing (a compare always queued)
# kept a chapter's request, or the gradients chapter's experiment, from ever starting.
PATIENCE_S = {INTERACTIVE: 0.0, ORDINARY: 0.25, EXPERIMENT: 1.0}
# In a long job's pauses, more urgent work gets this many seconds for each second the job has run:
# half the model thread each.
URGENT_SHARE = 1.0
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


@dataclass(order=True)
class Turn:
    """One queued turn of the model thread, in the order turns run: the earliest `due` first."""

    due: float  # when it was queued (or its client's earlier turns are through), plus its patience
    order: int
    priority: int = field(compare=False)
    run: Callable[[], None] = field(compare=False)
    futures: list[Future] = field(compare=False)  # cancelled if it never runs, failed if it raises
    queued: float = field(compare=False)  # when it was queued
    client: str = field(compare=False, default="")


class TurnQueue:
    """The model thread's queued turns, and which runs next: the earliest due, a turn being due once
    its client's turns queued before it are through (`FairShare`) plus its priority's patience."""

    def __init__(self) -> None:
        self._heap: list[Turn] = []
        self._order = itertools.count()
        self.fair = FairShare()

    def __len__(self) -> int:
        return len(self._heap)

    def __iter__(self) -> Iterator[Turn]:
        return iter(self._heap)

    def push(self, priority: int, run: Callable[[], None], futures: list[Future], client: str,
             now: float) -> Turn:
        due = self.fair.due(client, now) + PATIENCE_S.get(priority, 0.0)
        turn = Turn(due, next(self._order), priority, run, futures, now, client)
        heapq.heappush(self._heap, turn)
        return turn

    def pop(self) -> Turn:
        """The turn that runs next, out of the queue."""
        return heapq.heappop(self._heap)

    def urgent(self, than: int) -> Turn | None:
        """The turn a pause of a job at priority `than` runs next, out of the queue: the earliest due
        of those more urgent than it (None: none)."""
        more = [turn for turn in self._heap if turn.priority < than]
        return self._remove(min(more)) if more else None

    def take(self, run: Callable[[], None]) -> bool:
        """The queued turn that runs `run` out of the queue (False: none is queued)."""
        turn = next((turn for turn in self._heap if turn.run == run), None)
        return turn is not None and self._remove(turn) is turn

    def ran(self, client: str, seconds: float) -> None:
        self.fair.ran(client, seconds)

    def waiting(self, below: int = EXPERIMENT) -> Iterator[tuple[str, float]]:
        """(client, when queued) of every turn more urgent than `below`: the work admission counts."""
        return ((turn.client, turn.queued) for turn in self._heap if turn.priority < below)

    def drain(self) -> list[Turn]:
        """Every queued turn, out of the queue (the thread is closing)."""
        turns, self._heap = self._heap, []
        return turns

    def _remove(self, turn: Turn) -> Turn:
        self._heap.remove(turn)
        heapq.heapify(self._heap)
        return turn


def pause_until(began: float, ran: float, given: float) -> float:
    """When a long job's pause that began at `began` gives the thread back to it, the job having run
    `ran` seconds and its pauses having given urgent work `given` so far: no later than its account
    allows, so at once after a pause that overran."""
    return began + URGENT_SHARE * ran - given


def oldest(waiting: Iterable[tuple[str, float]], now: float) -> dict[str, float]:
    """Per client, how long its oldest waiting work (client, when it arrived) has waited."""
    first: dict[str, float] = {}
    for client, when in waiting:
        first[client] = min(when, first.get(client, when))
    return {client: now - when for client, when in first.items()}


def wait_met(ages: dict[str, float], client: str) -> float:
    """The wait a new request of `client` would meet, from each client's oldest queued work's age
    (`ages`): its own, since in turns between clients its new work waits behind its own, not behind
    another's; and, where two or more other clients have work queued, the least of their ages, since
    then every client is that far behind (the replica is), not one client alone."""
    others = sorted(age for name, age in ages.items() if name != client)
    return max(ages.get(client, 0.0), others[0] if len(others) >= 2 else 0.0)


def fair_order(items: Iterable[T], client: Callable[[T], Hashable],
               held: dict[Hashable, int] | None = None) -> list[T]:
    """`items` (oldest first) taken round by round: each client's oldest, then each one's second,
    and so on; within a round, the clients that hold least already (`held`: rows in the pool) first,
    then in the order of their oldest."""
    queues: dict[Hashable, list[T]] = {}
    for item in items:
        queues.setdefault(client(item), []).append(item)
    if held:
        queues = dict(sorted(queues.items(), key=lambda kv: held.get(kv[0], 0)))  # stable: oldest next
    order: list[T] = []
    depth = 0
    while len(order) < sum(len(q) for q in queues.values()):
        order += [q[depth] for q in queues.values() if depth < len(q)]
        depth += 1
    return order


def shards(groups: int, lanes: int) -> int:
    """The pools a group's new sentences are shared out over, `groups` groups having work: one per
    lane while fewer groups than lanes have work (one model typed into by many readers: every core
    steps it), else one (the groups themselves keep the lanes busy, each in bigger steps)."""
    return max(1, lanes // max(1, groups))


def pool_room(sizes: list[int], waiting: int, own: int, pool_rows: int) -> int:
    """How many of a group's `waiting` sentences may join a pool now holding `own`, the group's pools
    holding `sizes`: at most `pool_rows`, and its share of the group's sentences over its pools."""
    share = -(-(sum(sizes) + waiting) // max(1, len(sizes)))  # ceil
    return min(pool_rows, max(share, 1)) - own


def admit(waiting: list[T], room: int, wanted: Callable[[T], bool], client: Callable[[T], Hashable],
          held: dict[Hashable, int] | None = None) -> tuple[list[T], list[T]]:
    """Of `waiting` (oldest first): those that join a pool now, round by round between clients (the
    clients holding fewest of the pool's rows, `held`, first), at most `room`; and those nobody wants
    any more, dropped unstarted. The rest wait. So when a row frees in a pool one client has filled,
    a reader with nothing in it takes it, not that client's next."""
    joining, gone = [], []
    for item in fair_order(waiting, client, held):
        if not wanted(item):
            gone.append(item)
        elif len(joining) < room:
            joining.append(item)
    return joining, gone


def homes(sizes: dict[str, int], processes: int) -> dict[str, int]:
    """model -> its home stepper process: the largest first, each to the process with the least so far."""
    totals = [0] * processes
    home = {}
    for name, size in sorted(sizes.items(), key=lambda item: -item[1]):
        home[name] = min(range(processes), key=lambda i: (totals[i], i))
        totals[home[name]] += size
    return home


def route(group: Hashable, home: int, live: dict[Hashable, list[int]], ready: list[int]) -> int:
    """The process among `ready` for a new sentence of `group`, whose home is `home`, `live` giving per
    group its sentences in each process: the home while at least as many groups have work as there
    are processes, else the process with the fewest of the group's (the home first among equals)."""
    if home not in ready:
        home = ready[0]
    if len({g for g, counts in live.items() if any(counts)} | {group}) >= len(ready):
        return home
    mine = live.get(group) or [0] * (max(ready) + 1)
    return min(ready, key=lambda i: (mine[i], i != home))
