"""What runs next (app/runtime/scheduler.py): the model thread's turns and a pool's joins in turns
between clients, and the wait admission reads per client. Exact: the clock is given, nothing sleeps."""

from __future__ import annotations

import threading

from app.runtime.model_thread import ModelThread
from app.runtime.scheduler import (
    EXPERIMENT,
    INTERACTIVE,
    ORDINARY,
    FairShare,
    TurnQueue,
    admit,
    fair_order,
    homes,
    oldest,
    pause_until,
    pool_room,
    route,
    shards,
    wait_met,
)
from app.runtime.stepped_decoding import Batchable
from tests.app.runtime.test_model_thread import CountingPool


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
        worker._queue.ran("flood", 1.0)  # a flood turn has taken a second: its next ones a second apart
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


def test_the_queue_runs_the_earliest_due_by_priority_patience_then_fair_between_clients():
    queue = TurnQueue()
    ran = []
    experiment = queue.push(EXPERIMENT, lambda: ran.append("experiment"), [], "a", now=0.0)
    chapter = queue.push(ORDINARY, lambda: None, [], "b", now=0.5)
    typing = queue.push(INTERACTIVE, lambda: None, [], "c", now=0.9)
    late = queue.push(INTERACTIVE, lambda: None, [], "d", now=1.1)  # past the experiment's patience (1 s)
    assert [t.due for t in (experiment, chapter, typing, late)] == [1.0, 0.75, 0.9, 1.1]
    assert [queue.pop() for _ in range(4)] == [chapter, typing, experiment, late]
    assert len(queue) == 0


def test_a_flooding_client_s_turns_interleave_with_a_reader_s():
    queue = TurnQueue()
    queue.ran("flood", 0.1)
    flood = [queue.push(INTERACTIVE, lambda: None, [], "flood", now=0.0) for _ in range(5)]
    reader = queue.push(INTERACTIVE, lambda: None, [], "reader", now=0.05)
    order = [queue.pop() for _ in range(6)]
    assert order.index(reader) == 1  # behind the flood's first, not its fifth
    assert [t for t in order if t is not reader] == flood


def test_a_pause_runs_the_earliest_due_of_the_more_urgent_turns_and_one_turn_can_be_taken_out():
    queue = TurnQueue()
    step = object.__new__(type("Step", (), {"__call__": lambda self: None}))
    chapter = queue.push(ORDINARY, lambda: None, [], "a", now=0.0)
    typing = queue.push(INTERACTIVE, lambda: None, [], "b", now=0.1)
    queue.push(INTERACTIVE, step, [], "", now=0.2)
    assert queue.urgent(than=ORDINARY) is typing  # the chapter's turn is not more urgent than itself
    assert queue.take(step) and not queue.take(step)
    assert queue.urgent(than=ORDINARY) is None and list(queue) == [chapter]
    assert list(queue.waiting(below=EXPERIMENT)) == [("a", 0.0)]
    assert queue.drain() == [chapter] and len(queue) == 0


def test_a_pause_gives_urgent_work_as_long_as_the_job_ran():
    assert pause_until(began=10.0, ran=0.25, given=0.0) == 10.25
    assert pause_until(began=10.0, ran=0.25, given=0.5) == 9.75  # an earlier pause overran: none now


def test_the_oldest_waiting_work_per_client():
    assert oldest([("a", 1.0), ("b", 2.0), ("a", 0.5)], now=3.0) == {"a": 2.5, "b": 1.0}


def test_a_group_is_shared_out_over_the_lanes_while_few_groups_have_work():
    assert [shards(groups, lanes=2) for groups in (0, 1, 2, 5)] == [2, 2, 1, 1]
    assert pool_room([3, 0], waiting=3, own=0, pool_rows=16) == 3  # its half of 6
    assert pool_room([3, 0], waiting=3, own=3, pool_rows=16) == 0
    assert pool_room([0], waiting=40, own=0, pool_rows=16) == 16


def test_joining_sentences_are_admitted_round_by_round_and_the_unwanted_dropped():
    waiting = [("flood", 1), ("flood", 2), ("flood", 3), ("reader", 4), ("flood", 5), ("gone", 6)]
    joining, gone = admit(waiting, room=3, wanted=lambda s: s[0] != "gone", client=lambda s: s[0])
    assert joining == [("flood", 1), ("reader", 4), ("flood", 2)]
    assert gone == [("gone", 6)]


def test_each_model_has_a_home_process_and_one_model_alone_goes_where_it_has_fewest():
    assert homes({"transformer": 9, "lstm": 5, "rnn": 2, "lstm-dot": 5}, 2) == {
        "transformer": 0, "lstm": 1, "lstm-dot": 1, "rnn": 0}
    # two models with work on two processes: each at home
    assert route("lstm", home=1, live={"transformer": [3, 0]}, ready=[0, 1]) == 1
    # one model alone: the process with fewer of its sentences, the home first among equals
    assert route("transformer", home=0, live={"transformer": [3, 1]}, ready=[0, 1]) == 1
    assert route("transformer", home=0, live={"transformer": [1, 1]}, ready=[0, 1]) == 0
    assert route("transformer", home=1, live={}, ready=[0]) == 0  # its home not ready


def test_a_row_freed_in_a_pool_one_client_filled_goes_to_a_client_with_none():
    waiting = [("flood", 1), ("flood", 2), ("reader", 3)]
    joining, _ = admit(waiting, room=1, wanted=lambda s: True, client=lambda s: s[0], held={"flood": 15})
    assert joining == [("reader", 3)]
    assert fair_order(waiting, lambda s: s[0], {"flood": 15}) == [("reader", 3), ("flood", 1), ("flood", 2)]
