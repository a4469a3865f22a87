"""POST /api/train and GET /api/train: the contract, the limits (422 before any work), one run per
replica and the line for it (one place per client, 429 past it), and a run's process ending with its
client."""

from __future__ import annotations

import asyncio
import json
import math
import os
import select
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest
from pydantic import TypeAdapter

from app.clients import UNKNOWN
from app.config import REPO_ROOT
from app.schemas.live import TrainEnd, TrainLine
from app.services import live as live_service
from app.services.live import LiveLimits
from bench.serving import live_processes, serve
from models import live
from tests.app.conftest import LEAN_SERVER

QUICK = {"length": 5, "steps": 12, "contestants": ["lstm", "lstm-additive"]}


def test_the_experiment_describes_itself(client):
    info = client.get("/api/train").json()
    assert info["tasks"] == ["reverse", "copy"]
    assert [c["name"] for c in info["contestants"]] == list(live.CONTESTANTS)
    kinds = {c["name"]: c["attention"] for c in info["contestants"]}
    assert kinds["lstm"] is None and kinds["rnn"] is None and kinds["lstm-additive"] == "additive"
    assert info["defaults"]["contestants"] == list(live.LiveConfig.contestants)
    assert info["limits"]["max_length"] == LiveLimits.max_length and info["slots"] == 1


@pytest.mark.parametrize(("body", "field", "words"), [
    ({"length": 3}, "length", "greater than or equal to 4"),
    ({"length": 41}, "length", "less than or equal to 40"),
    ({"steps": 0}, "steps", "greater than or equal to 1"),
    ({"steps": 3001}, "steps", "less than or equal to 3000"),
    ({"seconds": 61}, "seconds", "less than or equal to 60"),
    ({"seed": -1}, "seed", "greater than or equal to 0"),
    ({"contestants": ["lstm", "lstm"]}, "contestants", "at most once"),
    ({"contestants": []}, "contestants", "at least 1"),
    ({"contestants": ["gru"]}, "contestants", "lstm"),
    ({"task": "sort"}, "task", "reverse"),
    ({"length": "long"}, "length", "integer"),
    ({"alphabet": 3}, "alphabet", "Extra inputs"),
])
def test_out_of_range_settings_are_refused_naming_the_limit(client, body, field, words):
    response = client.post("/api/train", json=body)
    assert response.status_code == 422, response.text
    [error] = [e for e in response.json()["detail"] if field in e["loc"]]
    assert words in error["msg"]
    assert client.get("/api/train").json()["running"] == 0  # nothing was started


def run_lines(client, body: dict) -> list[str]:
    with client.stream("POST", "/api/train", json=body) as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("application/x-ndjson")
        return [line for line in response.iter_lines() if line]


@pytest.fixture(scope="module")
def quick_run(client) -> list[str]:
    """The lines of one quick run, seed 7: read by the tests of what a run says (a run is seconds)."""
    return run_lines(client, {**QUICK, "seed": 7})


def test_a_run_streams_progress_then_each_final_and_frees_its_slot(client, quick_run):
    lines = [json.loads(line) for line in quick_run]
    assert lines[0]["settings"]["length"] == 5
    finals = [line for line in lines if line.get("done")]
    assert [f["contestant"] for f in finals] == QUICK["contestants"]
    assert all(f["step"] == 12 and 0 <= f["accuracy"] <= 1 for f in finals)
    assert lines[-2]["finished"] and lines[-1]["process"]["exit"] == 0 and "error" not in lines[-1]
    assert client.get("/api/train").json()["running"] == 0


def test_every_line_of_a_run_is_one_of_the_contract_s_shapes(quick_run):
    shapes = [type(TypeAdapter(TrainLine).validate_json(line)).__name__ for line in quick_run]
    assert shapes[0] == "TrainStart" and shapes[-2:] == ["TrainSummary", "TrainEnd"]
    assert {"TrainProgress", "TrainFinal"} <= set(shapes)


def test_a_line_outside_the_contract_stops_the_run_and_says_so(client, monkeypatch):
    monkeypatch.setattr(live_service, "LINE", TypeAdapter(TrainEnd))  # every line the process writes is "wrong"
    with client.stream("POST", "/api/train", json=QUICK) as response:
        lines = [json.loads(line) for line in response.iter_lines() if line]
    assert len(lines) == 1 and "outside the contract" in lines[0]["error"]
    assert client.get("/api/train").json()["running"] == 0


def test_the_same_settings_give_the_same_run(client, quick_run):
    def firsts(lines: list[str]) -> list:
        return [json.loads(line)["first_losses"] for line in lines if '"done"' in line]
    assert firsts(run_lines(client, {**QUICK, "seed": 7})) == firsts(quick_run)


def test_a_second_reader_waits_in_line_then_runs_when_the_slot_is_free(client):
    runs = client.app.state.live
    # on the server's loop, as a request takes it: holds the replica's one slot until dropped
    taken = client.portal.call(runs.start, runs.settings({}), "someone else")
    with client.stream("POST", "/api/train", json=QUICK) as response:
        assert response.status_code == 200
        lines = response.iter_lines()
        queued = json.loads(next(lines))["queued"]
        assert queued["place"] == 1 and queued["starts_in"] >= 1
        assert client.get("/api/train").json()["waiting"] == 1
        del taken  # never read: its slot goes to the head of the line
        rest = [json.loads(line) for line in lines]
    assert "settings" in rest[0] and rest[-1]["process"]["exit"] == 0
    assert client.get("/api/train").json()["running"] == 0


def test_one_client_holds_one_place_and_the_refusal_names_live_training(client):
    runs = client.app.state.live
    # held by TestClient's own client, as app/clients.py names it
    taken = client.portal.call(runs.start, runs.settings({}), UNKNOWN)
    response = client.post("/api/train", json=QUICK)
    assert response.status_code == 429 and int(response.headers["retry-after"]) >= 1
    detail = response.json()["detail"]
    assert detail.startswith("live training: you already have a run") and "timing" not in detail, detail
    del taken
    assert client.get("/api/train").json()["running"] == 0


def test_a_full_line_is_refused_naming_it(client, monkeypatch):
    runs = client.app.state.live
    monkeypatch.setattr(runs, "line_limit", 0)
    taken = client.portal.call(runs.start, runs.settings({}), "someone else")
    response = client.post("/api/train", json=QUICK)
    assert response.status_code == 429 and "the line is full" in response.json()["detail"]
    del taken
    assert client.get("/api/train").json()["running"] == 0


def test_the_reader_whose_run_ended_waits_behind_those_already_waiting():
    async def scenario():
        runs = live_service.LiveRuns(None)
        config = runs.settings(QUICK)
        first = runs.start(config, "a")
        second = runs.start(config, "b")
        assert json.loads(await anext(second))["queued"]["place"] == 1
        del first  # a's run ends (never read here: its finalizer gives the slot back)
        await asyncio.sleep(0)
        assert runs.running == 1 and not runs.waiting  # the slot went to b, not back to the pool
        again = runs.start(config, "a")  # a asks again at once: behind b
        told = json.loads(await anext(again))["queued"]
        assert told == {"place": 1, "starts_in": again_expected(runs, config)}
        await again.aclose()
        await second.aclose()
        assert runs.running == 0 and not runs.waiting and not runs.holders

    asyncio.run(scenario())


def again_expected(runs, config) -> int:
    """What the line promises the next in line: the running run's expected rest (its cap, nothing
    measured yet), rounded up."""
    return math.ceil(max(0.0, runs.started_at + live_service.wall_cap(config) - time.monotonic()))


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads processes from /proc")
def test_the_run_ends_when_its_client_hangs_up(tiny_checkpoints):
    before = live_processes()
    env = {"ATTENTION_LAB_CHECKPOINTS": str(tiny_checkpoints), "ATTENTION_LAB_DEVICE": "cpu", **LEAN_SERVER}
    with serve(env, timeout=60) as url:
        with httpx.Client(timeout=60) as http, http.stream(
                "POST", f"{url}/api/train", json={**QUICK, "steps": 3000}) as response:
            assert response.status_code == 200
            lines = response.iter_lines()  # held: dropping it would close the stream at once
            next(lines)  # the settings: the process is running
            # this server's (another test's server may be training beside it)
            running = {pid for pid in live_processes() - before if _parent_serves(pid, url)}
            assert len(running) == 1
        hung_up = time.monotonic()
        while live_processes() & running and time.monotonic() - hung_up < 5:
            time.sleep(0.05)
        gone_after = time.monotonic() - hung_up
        assert not live_processes() & running, "the training process outlived its client"
        assert gone_after < 1.0
        assert httpx.get(f"{url}/api/train").json()["running"] == 0
    assert os.getpid() not in running


def _stat(pid: int) -> list[str] | None:
    """/proc/<pid>/stat's fields after the command's name (state, parent id, ...); None once gone."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None


def _parent_serves(pid: int, url: str) -> bool:
    """Process `pid`'s parent is the server at `url` (its command line names the URL's port)."""
    parent = (_stat(pid) or ["", ""])[1]
    try:
        command = Path(f"/proc/{parent}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return False
    return url.rsplit(":", 1)[1].encode() in command


def _children(pid: int) -> list[int]:
    return [int(entry.name) for entry in Path("/proc").iterdir()
            if entry.name.isdigit() and (_stat(int(entry.name)) or ["", ""])[1] == str(pid)]


def _running(pid: int) -> bool:
    fields = _stat(pid)
    return fields is not None and fields[0] not in "ZX"  # a zombie waits for a parent to read it: gone


def _watch(pid: int, seen: list[tuple[int, int]]) -> None:
    """Record the process's (nice value, parent id) from /proc until it ends: the test client hands
    over a response once it is whole, and a short run may have ended, and been reaped, by then."""
    while (fields := _stat(pid)) is not None and fields[0] not in "ZX":
        seen.append((int(fields[16]), int(fields[1])))
        time.sleep(0.001)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="nice values and /proc are Linux's")
def test_the_run_is_started_without_preexec_fn_and_steps_back_by_itself(client, monkeypatch):
    """Code run between fork and exec (preexec_fn) may deadlock the child of a server with threads:
    the child is told on its command line what to do (--nice, --parent) and does it."""
    started, seen, real = [], [], asyncio.create_subprocess_exec

    async def spy(*args, **kwargs):
        started.append((args, kwargs, process := await real(*args, **kwargs)))
        threading.Thread(target=_watch, args=(process.pid, seen), daemon=True).start()
        return process

    monkeypatch.setattr(live_service.asyncio, "create_subprocess_exec", spy)
    mine = os.getpriority(os.PRIO_PROCESS, 0)
    with client.stream("POST", "/api/train", json=QUICK) as response:
        next(response.iter_lines())
        [(args, kwargs, process)] = started
        assert "preexec_fn" not in kwargs
        assert list(args[-4:]) == ["--nice", str(live_service.NICE), "--parent", str(os.getpid())]
    assert client.get("/api/train").json()["running"] == 0
    # the run has ended: what it was while it ran (it steps back before it imports torch)
    assert seen and seen[-1][0] == min(19, mine + live_service.NICE), seen[-5:]
    assert {parent for _, parent in seen} == {os.getpid()}


SERVER = """
import asyncio, os, time
from app.services.live import LiveRuns
from models.live import LiveConfig

async def serve():
    lines = LiveRuns(None).start(LiveConfig(length=5, steps=3000, contestants=("lstm",)))
    await lines.__anext__()
    if (holder := os.fork()) == 0:  # holds the run's pipe open: no broken pipe ends the run
        time.sleep(60)
        os._exit(0)
    print(holder, flush=True)
    await asyncio.sleep(60)

asyncio.run(serve())
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG and /proc are Linux's")
def test_a_run_dies_with_a_server_killed_outright():
    """A server given no chance to end its runs (SIGKILL) leaves no training behind, even while the
    run writes nothing (the signal asked for by --parent, not a broken pipe, ends it)."""
    server = subprocess.Popen([sys.executable, "-c", SERVER], cwd=REPO_ROOT, stdout=subprocess.PIPE, text=True)
    children = []
    try:
        assert select.select([server.stdout], [], [], 60)[0], "the run did not start within 60 s"
        children = [int(server.stdout.readline())]  # the pipe's holder
        children += [pid for pid in _children(server.pid) if pid != children[0]]  # the run
        assert len(children) == 2
        server.send_signal(signal.SIGKILL)
        server.wait(10)
        deadline = time.monotonic() + 5
        while _running(children[1]):
            assert time.monotonic() < deadline, "the training process outlived its server"
            time.sleep(0.05)
    finally:
        server.kill()
        server.wait(10)
        server.stdout.close()
        for pid in children:
            if _running(pid):
                os.kill(pid, signal.SIGKILL)
