"""The training slot comes back whatever the client does (issue 66): a client that stops reading is
dropped after the write deadline (and a teaching run's client too), a cancelled ending still gives
the slot back, a stream collected while the slots' lock is held does not deadlock, and the line
survives a hand-over that wakes its reader late. Where a training run starts, its process is a
stand-in that writes one contract line and then waits, so each test takes about a second once the
fix is in; the teaching run's is the real one, on the tiny models."""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import sys
import threading
import time

import pytest
import uvicorn

from app.main import create_app
from app.routes.live import DeadlinedStream
from app.services import live as live_service
from bench.serving import free_port
from tests.app.conftest import tiny_settings

QUICK = {"length": 5, "steps": 12, "contestants": ["lstm", "lstm-additive"]}
LINE = {"process": {"peak_mb": 0.0, "exit": 0}}  # a TrainEnd: the contract lets it through
BOUND_S = 10.0  # what each test waits at most for the slot; the fixed code takes well under 1 s


@pytest.fixture
def spawned(monkeypatch) -> list:
    """Every process a run starts (training or teaching: both through asyncio), each killed after the test."""
    started, real = [], asyncio.create_subprocess_exec

    async def spy(*args, **kwargs):
        started.append(process := await real(*args, **kwargs))
        return process

    monkeypatch.setattr(asyncio, "create_subprocess_exec", spy)
    yield started
    for process in started:
        with contextlib.suppress(ProcessLookupError):
            process.kill()


@pytest.fixture
def children(spawned, monkeypatch) -> list:
    """Every training run's process is the stand-in; the list holds them."""
    script = f"import time; print({json.dumps(json.dumps(LINE))}, flush=True); time.sleep(60)"
    monkeypatch.setattr(live_service, "command", lambda config: [sys.executable, "-c", script])
    return spawned


async def until(condition, bound_s: float = BOUND_S) -> bool:
    """Whether `condition()` came true within `bound_s`, the loop running meanwhile."""
    deadline = time.monotonic() + bound_s
    while not condition():
        if time.monotonic() > deadline:
            return False
        await asyncio.sleep(0.01)
    return True


def train_request(body: dict, path: str = "/api/train") -> dict:
    raw = json.dumps(body).encode()
    return {"type": "http", "asgi": {"version": "3.0", "spec_version": "2.3"}, "http_version": "1.1",
            "method": "POST", "scheme": "http", "path": path, "raw_path": path.encode(),
            "query_string": b"", "root_path": "", "client": ("127.0.0.1", 50000), "server": ("test", 80),
            "headers": [(b"host", b"test"), (b"content-type", b"application/json"),
                        (b"content-length", str(len(raw)).encode())]}, raw


def reads_nothing(body: bytes):
    """(receive, send, sent): an ASGI client that sends `body`, then neither reads what it is sent
    (its first write of the answer's body never completes) nor hangs up; `sent` what it was sent."""
    asked, sent = [], []

    async def receive():
        if not asked:
            asked.append(body)
            return {"type": "http.request", "body": body, "more_body": False}
        await asyncio.Future()  # the client neither sends more nor hangs up
        raise AssertionError("unreachable")

    async def send(message):
        sent.append(message)
        if message["type"] == "http.response.body":
            await asyncio.Future()  # a client that stopped reading: the write never completes

    return receive, send, sent


async def served_until_it_stops(app, scope, body: bytes, bound_s: float = BOUND_S) -> list[dict]:
    """`app` answering a client that reads nothing, until the answer stops by itself; what was sent."""
    receive, send, sent = reads_nothing(body)
    serving = asyncio.create_task(app(scope, receive, send))
    try:
        await asyncio.wait_for(asyncio.shield(serving), bound_s)
    finally:
        serving.cancel()
    assert sent[0]["status"] == 200  # the answer had started: this is the stream's own deadline
    assert all(m.get("more_body", True) for m in sent[1:])  # left unfinished: the server closes it
    return sent


def test_a_client_that_stops_reading_is_dropped_and_its_slot_comes_back(tiny_checkpoints, children):
    """The server's send blocks once the client reads no more (socket buffers full); past the write
    deadline the response stops, the run's process ends and the slot is free for the next reader."""
    app = create_app(tiny_settings(tiny_checkpoints, train_write_deadline_s=0.2))
    runs = app.state.live

    async def scenario():
        await served_until_it_stops(app, *train_request(QUICK))
        assert runs.running == 0 and not runs.holders
        assert children[0].returncode is not None  # the run's process is gone with it

    asyncio.run(scenario())


def test_a_teaching_client_that_stops_reading_is_dropped_and_its_slot_comes_back(tiny_checkpoints, spawned):
    """The same for "Teach it a pair" (POST /api/teach), with its real process on the tiny models: the
    first line is sent and never read; past the write deadline the response stops, the process ends
    and the teaching slot is free."""
    app = create_app(tiny_settings(tiny_checkpoints, train_write_deadline_s=0.2))
    runs = app.state.teach
    request = train_request({"text": "Je mange du pain.", "target": "I eat bread.", "steps": 50}, "/api/teach")

    async def scenario():
        async with app.router.lifespan_context(app):  # the models loaded: a run names one of them
            # the process loads torch and the model before its first line: a bound of its own
            await served_until_it_stops(app, *request, 6 * BOUND_S)
            assert runs.running == 0 and not runs.holders
            assert len(spawned) == 1 and spawned[0].returncode is not None

    asyncio.run(scenario())


def test_over_a_real_socket_a_client_that_reads_nothing_is_dropped_within_the_deadline():
    """The same through uvicorn and a real socket: the server's write does block once a client reads
    nothing, and the deadline is what ends it. The answer is large chunks, so the socket's buffers
    fill at once (a training run writes too slowly for a test); the client's socket reads nothing."""
    closed_after = []

    async def lines():
        began = time.monotonic()
        try:
            while True:
                yield b"x" * 100_000 + b"\n"
        finally:
            closed_after.append(time.monotonic() - began)

    async def app(scope, receive, send):
        await DeadlinedStream(lines(), 0.5)(scope, receive, send)

    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, port=port, log_level="critical", lifespan="off"))
    serving = threading.Thread(target=server.run, daemon=True)
    serving.start()
    try:
        deadline = time.monotonic() + BOUND_S
        while not server.started and time.monotonic() < deadline:
            time.sleep(0.01)
        with socket.create_connection(("127.0.0.1", port)) as reader:
            reader.sendall(b"GET / HTTP/1.1\r\nHost: test\r\n\r\n")  # and never reads
            while not closed_after and time.monotonic() < deadline:
                time.sleep(0.01)
        assert closed_after and closed_after[0] < BOUND_S, "the stream outlived its reader's deadline"
    finally:
        server.should_exit = True
        serving.join(BOUND_S)


def test_a_run_whose_ending_is_cancelled_still_gives_its_slot_back(children, monkeypatch):
    """The stream's closing is cancelled (a second cancel, e.g. the server shutting down) while it
    waits for the process to be reaped: the slot comes back all the same, at once, not when the
    stream happens to be garbage collected."""
    entered = asyncio.Event()

    async def stuck_end(process):
        process.kill()
        entered.set()
        await asyncio.Future()  # a reaping that never finishes: only a cancel gets out of it

    monkeypatch.setattr(live_service, "end", stuck_end)

    async def scenario():
        runs = live_service.LiveRuns(None)
        lines = runs.start(runs.settings(QUICK), "a")
        assert json.loads(await anext(lines)) == LINE
        closing = asyncio.create_task(lines.aclose())
        await asyncio.wait_for(entered.wait(), BOUND_S)
        closing.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await closing
        assert runs.running == 0 and not runs.holders  # `lines` is still referenced: no finalizer did it
        await children[0].wait()

    asyncio.run(scenario())


def test_a_stream_collected_while_the_slots_lock_is_held_does_not_deadlock():
    """A garbage collection may run a dropped stream's finalizer on any thread, inside any code:
    inside `start()` too, which holds the slots' lock. The finalizer must not wait for that lock (it
    is the same thread's: it would wait for ever); the slot and the place come back all the same."""
    async def scenario():
        runs = live_service.LiveRuns(None)
        config = runs.settings(QUICK)
        dropped = [runs.start(config, "a"), runs.start(config, "b")]  # a running, b waiting; never read

        def collect_under_the_lock():
            with runs.lock:
                dropped.clear()  # the last references: both finalizers run here, the lock held

        collector = threading.Thread(target=collect_under_the_lock, daemon=True)
        collector.start()
        collector.join(BOUND_S)
        assert not collector.is_alive(), "a finalizer deadlocked on the slots' lock"
        assert await until(lambda: runs.running == 0 and not runs.waiting and not runs.holders)

    asyncio.run(scenario())


def test_a_reader_woken_by_its_timer_after_the_hand_over_goes_on_to_run(children, monkeypatch):
    """A freed slot is handed to the head of the line at once, but the reader learns it through the
    loop; a reader whose place timer fires in between is no longer in the line, and must then run
    (it holds the slot), not fail."""
    monkeypatch.setattr(live_service, "PLACE_EVERY_S", 0.01)

    async def scenario():
        loop = asyncio.get_running_loop()
        real = loop.call_soon_threadsafe
        runs = live_service.LiveRuns(None)
        config = runs.settings(QUICK)
        first = runs.start(config, "a")
        assert json.loads(await anext(first)) == LINE
        second = runs.start(config, "b")
        assert json.loads(await anext(second))["queued"]["place"] == 1
        # wake-ups from other threads arrive late, as when the loop is busy
        monkeypatch.setattr(loop, "call_soon_threadsafe",
                            lambda callback, *args, **kw: real(loop.call_later, 0.3, callback, *args))
        await first.aclose()  # a's run ends: its slot is b's
        assert runs.running == 1 and not runs.waiting
        assert json.loads(await asyncio.wait_for(anext(second), BOUND_S)) == LINE  # b's run
        await second.aclose()
        assert runs.running == 0 and not runs.holders

    asyncio.run(scenario())
