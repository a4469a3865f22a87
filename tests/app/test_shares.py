"""Each client's share of the expensive experiments (app/runtime/shares.py): the budget per client,
the refusal's headers, a Redis that is down, and the hostile client: one client keeps training and
timing refreshes going back to back while two readers ask for a run each, on one server and on two
server processes sharing one real Redis."""

from __future__ import annotations

import contextlib
import json
import re
import shutil
import subprocess
import threading
import time
from collections import Counter

import httpx
import pytest
from fastapi.testclient import TestClient

from app.main import create_app
from app.runtime.shares import Shares, ShareSpentError
from bench.serving import free_port, serve
from tests.app.conftest import tiny_settings

QUICK = {"length": 5, "steps": 12, "contestants": ["lstm", "lstm-additive"]}
POLICY = re.compile(r'^"(\w+)";q=(\d+);w=(\d+)$')
STATE = re.compile(r'^"(\w+)";r=(\d+);t=(\d+)$')


def test_each_client_has_its_own_budget_and_the_refusal_says_when_the_next_ask_is_free():
    shares = Shares({"train": "2/10 minutes"})
    assert shares.take("train", "a").remaining == 1
    assert shares.take("train", "a").remaining == 0
    with pytest.raises(ShareSpentError) as refused:
        shares.take("train", "a")
    assert shares.take("train", "b").remaining == 1  # another client's share is untouched
    error = refused.value
    assert str(error).startswith("your share of train (2 per 600 s) is used")
    assert 590 <= error.retry_after <= 600
    assert error.headers["RateLimit-Policy"] == '"train";q=2;w=600'
    assert re.fullmatch(r'"train";r=0;t=(59\d|600)', error.headers["RateLimit"])


def test_the_window_moves_an_ask_is_free_again_once_it_leaves_the_window():
    shares = Shares({"timing": "1/1 second"})
    shares.take("timing", "a")
    with pytest.raises(ShareSpentError):
        shares.take("timing", "a")
    time.sleep(1.1)
    assert shares.take("timing", "a").remaining == 0


def test_an_unreachable_redis_counts_on_this_replica_instead_of_failing():
    shares = Shares({"train": "1/1 minute"}, f"redis://127.0.0.1:{free_port()}")  # nothing listens there
    began = time.monotonic()
    assert shares.take("train", "a").remaining == 0
    with pytest.raises(ShareSpentError):  # the budget still holds, counted locally
        shares.take("train", "a")
    assert time.monotonic() - began < 2  # one failed connection, not one per ask


def test_the_routes_spend_shares_and_refuse_with_the_draft_s_headers(tiny_checkpoints):
    settings = tiny_settings(tiny_checkpoints, shares=True, share_timing="1/1 minute",
                             share_gradients="1/1 minute", share_long_lag="1/1 minute")
    with TestClient(create_app(settings)) as client:
        assert client.post("/api/timing", json={"lengths": [2, 4]}).status_code == 200
        for _ in range(3):  # a kept result costs nothing
            assert client.post("/api/timing", json={"lengths": [2, 4]}).status_code == 200
        assert client.post("/api/timing", json={"lengths": [2, 4], "refresh": True}).status_code == 200
        refused = client.post("/api/timing", json={"lengths": [2, 4], "refresh": True})
        assert refused.status_code == 429
        assert refused.json()["detail"].startswith("your share of timing")
        assert POLICY.match(refused.headers["ratelimit-policy"]).groups() == ("timing", "1", "60")
        name, remaining, reset = STATE.match(refused.headers["ratelimit"]).groups()
        assert (name, remaining) == ("timing", "0") and int(refused.headers["retry-after"]) >= int(reset) > 0
        body = {"text": "Je mange du pain.", "length": 8}
        assert client.post("/api/gradients", json=body).status_code == 200
        assert client.post("/api/gradients", json=body).status_code == 429


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
    env = {"ATTENTION_LAB_CHECKPOINTS": str(tiny_checkpoints), "ATTENTION_LAB_DEVICE": "cpu", **SHARES}
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
        env = {"ATTENTION_LAB_CHECKPOINTS": str(tiny_checkpoints), "ATTENTION_LAB_DEVICE": "cpu", **SHARES,
               "ATTENTION_LAB_REDIS_URL": redis_url}
        with serve(env, timeout=60) as one, serve(env, timeout=60) as two:
            # the hostile client spreads its asks over both replicas: together they grant one budget
            check_hostile(hostile_run([one, two]), budget=1)
