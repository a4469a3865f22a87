"""Each client's share of the expensive experiments (app/runtime/shares.py): the budget per client,
the refusal's headers, a Redis that is down, and the hostile client: one client keeps training and
timing refreshes going back to back while two readers ask for a run each, on one server and on two
server processes sharing one real Redis."""

from __future__ import annotations

import contextlib
import json
import re
import shutil
import socket
import subprocess
import threading
import time
import tracemalloc
from collections import Counter

import httpx
import pytest
from fastapi.testclient import TestClient

from app.limits import Budget
from app.main import create_app
from app.runtime.shares import REDIS_TIMEOUT_S, Ledger, Shares, ShareSpentError
from bench.serving import free_port, serve
from tests.app.conftest import LEAN_SERVER, tiny_settings

QUICK = {"length": 5, "steps": 12, "contestants": ["lstm", "lstm-additive"]}
POLICY = re.compile(r'^"(\w+)";q=(\d+);w=(\d+)$')
STATE = re.compile(r'^"(\w+)";r=(\d+);t=(\d+)$')


class Clock:
    """An injected monotonic clock: the tests move it, nothing sleeps."""

    def __init__(self):
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def budgets(**texts: str) -> dict[str, Budget]:
    """Shares as the settings make them: model time charged once the work has run (no room needed)."""
    return {name: Budget.parse(name, text, need=0.0 if name == "model_time" else 1.0)
            for name, text in texts.items()}


def test_each_client_has_its_own_bucket_and_the_refusal_says_which_share_and_when_it_frees():
    clock = Clock()
    shares = Shares(budgets(train="2/10 minutes"), clock=clock)
    assert shares.take("train", "a").remaining == 1
    assert shares.take("train", "a").remaining == 0
    with pytest.raises(ShareSpentError) as refused:
        shares.take("train", "a")
    assert shares.take("train", "b").remaining == 1  # another client's share is untouched
    error = refused.value
    assert str(error).startswith("your share of train (2 asks per 600 s) is used")
    assert error.share == "train" and error.retry_after == 300  # at 2 per 600 s, room for one more in 300 s
    assert error.headers["RateLimit-Policy"] == '"train";q=2;w=600'
    assert error.headers["RateLimit"] == '"train";r=0;t=600'
    clock.now += 300  # one ask's worth has drained
    assert shares.check("train", "a").remaining == 1 and not shares.check("train", "a").spent


def test_work_is_charged_what_it_cost_after_it_ran_and_a_check_costs_nothing():
    clock = Clock()
    shares = Shares(budgets(model_time="120/4 minutes"), clock=clock)  # 0.5 s of model time a second
    for _ in range(1000):  # refused, superseded or abandoned asks only ever check
        assert shares.check("model_time", "a").remaining == 120
    shares.charge("model_time", "a", 100.0)
    assert shares.check("model_time", "a").remaining == 20  # room: the next ask may start
    shares.charge("model_time", "a", 30.0)  # which may go over by its own cost
    quota = shares.check("model_time", "a")
    assert quota.spent and quota.remaining == 0 and quota.retry_s == 20  # 10 s over, at 0.5 a second
    assert quota.reset_s == 260  # 130 s of model time drain in 260 s
    clock.now += 20
    assert not shares.check("model_time", "a").spent


def test_a_client_gets_at_most_the_rate_and_one_bucket_over_any_stretch():
    clock = Clock()
    shares = Shares(budgets(model_time="120/4 minutes"), clock=clock)
    taken, step = 0.0, 2.0  # a greedy client: an ask of 2 s whenever there is room
    while clock.now < 1000 + 3600:
        if not shares.check("model_time", "greedy").spent:
            shares.charge("model_time", "greedy", step)
            taken += step
        clock.now += step
    assert taken <= 120 + 2 + 0.5 * 3600  # the rate, one bucket and one ask over
    assert taken >= 0.5 * 3600  # and it does get its rate


def test_the_buckets_memory_comes_back_once_100_000_clients_have_emptied_theirs():
    clock = Clock()
    shares = Shares(budgets(model_time="120/4 minutes"), clock=clock)
    shares.charge("model_time", "warm-up", 1.0)
    clock.now += 10
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for i in range(100_000):  # straight into the ledger: tracemalloc slows every allocation
            shares.local.charge(("model_time", f"10.{i >> 16}.{(i >> 8) & 255}.{i & 255}"), 0.5, 3.0)
        held = tracemalloc.get_traced_memory()[0] - before
        clock.now += 241  # every one of them empty again
        pauses = []
        for _ in range(200):  # ordinary traffic: each ask forgets a bounded number of them
            began = time.perf_counter()
            shares.check("model_time", "reader")
            pauses.append(time.perf_counter() - began)
        left = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert len(shares.local.buckets) == 0
    assert held > 10_000_000 and left < held / 50, (held, left)  # back within 2% of where it started
    print(f"\nbuckets: {held / 1e6:.1f} MB for 100,000 clients, {left / 1e3:.0f} kB after their windows; "
          f"longest check while forgetting them {max(pauses) * 1e3:.1f} ms")
    assert max(pauses) < 0.1  # a bounded pause each, never one sweep of them all


def test_past_its_bound_the_ledger_forgets_the_longest_untouched_bucket():
    clock = Clock()
    ledger = Ledger(clock, most=3)
    for client in "abcd":
        ledger.charge(("x", client), 0.001, 1.0)
    assert [key[1] for key in ledger.buckets] == ["b", "c", "d"]


def stalled_redis():
    """A TCP server that takes connections and never answers (a Redis that has stopped)."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    return listener, f"redis://127.0.0.1:{listener.getsockname()[1]}/0"


@pytest.mark.parametrize("kind", ["refuses", "stalls"])
def test_a_redis_that_refuses_or_stalls_is_counted_locally_within_its_timeout(kind):
    listener = None
    if kind == "stalls":
        listener, url = stalled_redis()
    else:
        url = f"redis://127.0.0.1:{free_port()}/0"  # nothing listens there
    try:
        shares = Shares(budgets(train="1/1 minute"), url)
        began = time.monotonic()
        assert shares.take("train", "a").remaining == 0
        with pytest.raises(ShareSpentError):  # the budget still holds, counted locally
            shares.take("train", "a")
        assert time.monotonic() - began < 3 * REDIS_TIMEOUT_S  # one failed round trip, not one per ask
    finally:
        if listener is not None:
            listener.close()


def test_a_stalled_redis_never_holds_the_event_loop(tiny_checkpoints):
    listener, url = stalled_redis()
    try:
        settings = tiny_settings(tiny_checkpoints, shares=True, redis_url=url)
        with TestClient(create_app(settings)) as client:
            waiting = threading.Thread(target=client.post, args=("/api/train",), kwargs={"json": QUICK})
            waiting.start()
            time.sleep(0.05)  # the train route's share is now waiting on the stalled Redis
            began = time.monotonic()
            assert client.get("/api/health").status_code in (200, 503)
            assert time.monotonic() - began < REDIS_TIMEOUT_S / 2  # not behind the Redis round trip
            waiting.join(30)
    finally:
        listener.close()


def test_the_routes_charge_work_that_ran_and_answer_every_time_with_their_share(tiny_checkpoints):
    settings = tiny_settings(tiny_checkpoints, shares=True, share_timing="1/1 minute", cache_size=16)
    with TestClient(create_app(settings)) as client:
        shares = client.app.state.shares
        shares.local.clock = Clock()  # stopped: the levels read below move only with what is charged
        body = {"text": "Je mange du pain.", "length": 8}
        for _ in range(100):  # refused before any work: free
            unknown = client.post("/api/gradients", json={**body, "models": ["nope"]})
            assert unknown.status_code == 404 and STATE.match(unknown.headers["ratelimit"])
            bad = client.post("/api/gradients", json={**body, "length": 10_000})
            assert bad.status_code == 422 and POLICY.match(bad.headers["ratelimit-policy"])
        assert shares.check("model_time", "unknown").remaining == 300
        answered = client.post("/api/gradients", json=body)
        assert answered.status_code == 200
        assert POLICY.match(answered.headers["ratelimit-policy"]).groups() == ("model_time", "300", "600")
        charged = shares.local.level(("model_time", "unknown"), 0.5)
        assert 0 < charged < 5  # the seconds its work took on the tiny models
        assert client.post("/api/gradients", json=body).status_code == 200  # kept: not charged again
        assert shares.local.level(("model_time", "unknown"), 0.5) == charged
        shares.charge("model_time", "unknown", 400.0)  # as if the client had taken its share
        refused = client.post("/api/gradients", json={**body, "length": 9})
        assert refused.status_code == 429 and refused.json()["share"] == "model_time"
        detail = refused.json()["detail"]
        assert detail.startswith("your share of model_time (300 seconds of model time per 600 s)")
        assert int(refused.headers["retry-after"]) >= 190

        assert client.post("/api/timing", json={"lengths": [2, 4]}).status_code == 200  # a measurement
        assert client.post("/api/timing", json={"lengths": [2, 4]}).status_code == 200  # kept: free
        for changed in ({"lengths": [2, 5]}, {"lengths": [2, 4], "refresh": True}):
            refused = client.post("/api/timing", json=changed)  # each a new measurement: charged
            assert refused.status_code == 429 and refused.json()["share"] == "timing", changed
            assert STATE.match(refused.headers["ratelimit"]).groups()[:2] == ("timing", "0"), changed
        kept = client.post("/api/timing", json={"lengths": [2, 4]})
        assert kept.status_code == 200 and STATE.match(kept.headers["ratelimit"]).groups()[1] == "0"


def hostile_run(urls: list[str], seconds: float = 60) -> dict:
    """One client (127.0.0.2) keeps POST /api/train and /api/timing refresh going back to back, over
    `urls` in turn, while two readers (127.0.0.3, then 127.0.0.4) ask for a run each on the first,
    until both readers' runs have ended (at most `seconds`). What each saw."""
    hostile = {"statuses": Counter(), "headers": []}
    readers: dict[str, dict] = {}
    stop = time.monotonic() + seconds
    done = threading.Event()

    def keep_asking():
        with httpx.Client(transport=httpx.HTTPTransport(local_address="127.0.0.2"), timeout=120) as http:
            turn = 0
            while time.monotonic() < stop and not done.is_set():
                url = urls[turn % len(urls)]
                turn += 1
                with http.stream("POST", f"{url}/api/train", json=QUICK) as response:
                    response.read()
                hostile["statuses"]["train", response.status_code] += 1
                answer = http.post(f"{url}/api/timing", json={"lengths": [2, 4], "refresh": True})
                hostile["statuses"]["timing", answer.status_code] += 1
                for r in (response, answer):
                    if r.status_code == 429:
                        hostile["headers"].append({k: r.headers.get(k) for k in
                                                   ("retry-after", "ratelimit-policy", "ratelimit")})
                time.sleep(0.25)  # back to back, short of a busy loop on the test machine's cores

    def read(name: str, address: str):
        record = readers[name] = {"asked": time.monotonic(), "promised": None, "started": None}
        with httpx.Client(transport=httpx.HTTPTransport(local_address=address), timeout=120) as http, \
                http.stream("POST", f"{urls[0]}/api/train", json=QUICK) as response:
            record["status"] = response.status_code
            for line in response.iter_lines():
                data = json.loads(line)
                if "queued" in data and record["promised"] is None:
                    record["promised"] = data["queued"]["starts_in"]
                if "settings" in data:
                    record["started"] = time.monotonic()
                record["end"] = data

    attacker = threading.Thread(target=keep_asking)
    attacker.start()
    time.sleep(1.0)  # the hostile client holds the slot
    first = threading.Thread(target=read, args=("first", "127.0.0.3"))
    first.start()
    time.sleep(0.5)
    second = threading.Thread(target=read, args=("second", "127.0.0.4"))
    second.start()
    for thread in (first, second):
        thread.join(timeout=seconds)
    done.set()
    attacker.join(timeout=seconds)
    return {"hostile": hostile, "readers": readers}


def check_hostile(seen: dict, budget: int) -> None:
    readers = seen["readers"]
    for name in ("first", "second"):
        reader = readers[name]
        assert reader["status"] == 200 and reader["started"] is not None, reader
        assert reader["end"]["process"]["exit"] == 0
        waited = reader["started"] - reader["asked"]
        if reader["promised"] is not None:  # queued: started within the time the line promised
            assert waited <= reader["promised"] + 2, (name, waited, reader["promised"])
    assert readers["first"]["started"] < readers["second"]["started"]  # in their order
    statuses = seen["hostile"]["statuses"]
    assert statuses["train", 200] <= budget and statuses["timing", 200] <= budget, statuses
    assert statuses["train", 429] + statuses["timing", 429] >= 1, statuses
    for headers in seen["hostile"]["headers"]:
        assert int(headers["retry-after"]) >= 1
        assert POLICY.match(headers["ratelimit-policy"]) and STATE.match(headers["ratelimit"]), headers
    print("\nhostile-client figures:", json.dumps({
        "readers": {n: {"waited_s": round(r["started"] - r["asked"], 2), "promised_s": r["promised"]}
                    for n, r in readers.items()},
        "hostile": {f"{route} {status}": n for (route, status), n in sorted(statuses.items())},
        "headers": seen["hostile"]["headers"][:2]}, indent=1))


SHARES = {"ATTENTION_LAB_SHARES": "true", "ATTENTION_LAB_SHARE_TRAIN": "1/1 minute",
          "ATTENTION_LAB_SHARE_TIMING": "1/1 minute"}


@pytest.mark.slow
def test_a_hostile_client_cannot_keep_the_readers_from_their_runs(tiny_checkpoints):
    env = {"ATTENTION_LAB_CHECKPOINTS": str(tiny_checkpoints), "ATTENTION_LAB_DEVICE": "cpu", **LEAN_SERVER,
           **SHARES}
    with serve(env, timeout=60) as url:
        check_hostile(hostile_run([url]), budget=1)


@contextlib.contextmanager
def redis_server():
    port = free_port()
    process = subprocess.Popen(["redis-server", "--port", str(port), "--save", "", "--appendonly", "no"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            with contextlib.suppress(OSError), __import__("socket").create_connection(("127.0.0.1", port), 0.2):
                break
            time.sleep(0.05)
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        process.terminate()
        process.wait(10)


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("redis-server") is None,
                    reason="needs the redis-server binary (Debian's redis-server package; .ci/run installs it)")
def test_two_server_processes_sharing_one_redis_hold_one_budget(tiny_checkpoints):
    with redis_server() as redis_url:
        env = {"ATTENTION_LAB_CHECKPOINTS": str(tiny_checkpoints), "ATTENTION_LAB_DEVICE": "cpu", **LEAN_SERVER,
               **SHARES,
               "ATTENTION_LAB_REDIS_URL": redis_url}
        with serve(env, timeout=60) as one, serve(env, timeout=60) as two:
            # the hostile client spreads its asks over both replicas: together they grant one budget
            check_hostile(hostile_run([one, two]), budget=1)


@pytest.mark.skipif(shutil.which("redis-server") is None,
                    reason="needs the redis-server binary (Debian's redis-server package; .ci/run installs it)")
def test_on_redis_a_check_or_a_charge_is_one_round_trip_and_an_emptied_bucket_expires():
    import redis

    with redis_server() as url:
        shares = Shares(budgets(model_time="120/4 minutes", train="2/10 minutes"), url)
        shares.check("train", "a")  # loads the script once
        server = redis.Redis.from_url(url)

        def scripts_run() -> int:  # the commands a script runs are counted too: count the scripts
            return server.info("commandstats")["cmdstat_evalsha"]["calls"]

        before = scripts_run()
        shares.charge("model_time", "a", 3.0)
        shares.take("train", "a")  # a check and a charge
        assert shares.check("model_time", "a").remaining == 117
        assert scripts_run() - before == 4  # one round trip each
        ttl = server.pttl("attention-lab:share:model_time:a")
        assert 6_000 <= ttl <= 7_000  # 3 s of model time empty in 6 s, then the key goes
        with pytest.raises(ShareSpentError):
            shares.take("train", "a")
            shares.take("train", "a")
        assert not shares.local.buckets  # nothing fell back to this replica's memory
