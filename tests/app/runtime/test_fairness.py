"""Fair by client (app/runtime/fairness.py): the model thread's turns and a pool's joins in turns
between clients, and the wait admission reads per client. Exact: the clock is given, nothing sleeps."""

from __future__ import annotations

import threading

from app.runtime.fairness import FairShare, fair_order, wait_met
from app.runtime.stepping import Batchable
from app.runtime.worker import ORDINARY, ModelThread
from tests.app.runtime.test_worker import CountingPool


def test_a_client_s_turns_are_due_one_after_another_by_what_its_turns_cost():
    fair = FairShare()
    fair.ran("flood", 0.5)
    assert [fair.due("flood", 10.0) for _ in range(4)] == [10.0, 10.5, 11.0, 11.5]
    assert fair.due("reader", 10.1) == 10.1  # nothing of its own queued: due at once, ahead of the flood's rest
    assert fair.due("", 10.1) == 10.1 and fair.due("", 10.1) == 10.1  # shared work is never pushed back
    assert fair.due("flood", 20.0) == 20.0  # an idle client starts afresh


def test_the_accounts_are_bounded():
    fair = FairShare(remembered=3)
    for client in "abcd":
        fair.due(client, 1.0)
    assert list(fair.through) == ["b", "c", "d"]


def test_joins_are_taken_round_by_round_between_clients():
    asked = [("flood", 1), ("flood", 2), ("flood", 3), ("reader", 1), ("other", 1), ("flood", 4), ("reader", 2)]
    assert fair_order(asked, lambda a: a[0]) == [
        ("flood", 1), ("reader", 1), ("other", 1), ("flood", 2), ("reader", 2), ("flood", 3), ("flood", 4)]


def test_admission_refuses_the_client_that_is_behind_not_the_readers_beside_it():
    ages = {"flood": 3.0, "reader": 0.02}
    assert wait_met(ages, "flood") == 3.0
    assert wait_met(ages, "reader") == 0.02
    assert wait_met(ages, "newcomer") == 0.02  # two others wait: the freshest of theirs
    assert wait_met({"flood": 3.0}, "newcomer") == 0.0  # one client behind is that client's affair
    assert wait_met({"a": 2.0, "b": 1.5, "c": 0.9}, "d") == 0.9  # everyone is behind: the replica is


def test_a_reader_s_turn_goes_between_a_flooding_client_s_turns():
    worker = ModelThread(1, lanes=1)
    order, release = [], threading.Event()
    try:
        worker.submit(release.wait, 10, priority=ORDINARY)  # the thread busy while the turns queue
        worker._fair.ran("flood", 1.0)  # a flood turn has taken a second: its next ones a second apart
        flood = [worker.submit(order.append, f"flood {i}", client="flood") for i in range(5)]
        reader = worker.submit(order.append, "reader", client="reader")
        release.set()
        for future in [*flood, reader]:
            future.result(timeout=10)
        assert order == ["flood 0", "reader", "flood 1", "flood 2", "flood 3", "flood 4"]
    finally:
        worker.close()


def test_a_reader_s_sentence_joins_a_full_pool_between_a_flooding_client_s():
    worker, log = ModelThread(1, lanes=1, batching=True, pool_rows=2), {}

    def sentence(client: str, text: str) -> Batchable:
        return Batchable(("compare", "m"), ("m", text), (text, 2), lambda: CountingPool(log), "m",
                         client=client)

    release = threading.Event()
    try:
        worker.submit(release.wait, 10)
        futures = [worker.step_together(sentence("flood", f"flood {i}")) for i in range(6)]
        futures.append(worker.step_together(sentence("reader", "reader")))
        release.set()
        for future in futures:
            future.result(timeout=10)
        assert log["joins"][0] == ["flood 0", "reader"]  # not behind the flood's six
    finally:
        worker.close()
