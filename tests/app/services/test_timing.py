"""The timing service on the tiny models: the answer's shape, the kept results, one measurement
at a time, the time limit, the lengths."""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from concurrent.futures import ThreadPoolExecutor

import pytest

from app.runtime.errors import BusyError, InvalidOptionError
from app.schemas.timing import EncoderSize
from app.services.language import Words
from app.services.timing import KEPT, MAX_LENGTH, MAX_LENGTHS, TimingBench, bench, check_lengths, describe
from models.probes.timing import LENGTHS
from tests.app.answers import sent

# the answer's times and ratios are each kept to 4 significant digits (half a unit in the 4th: at
# most 5e-4 relative), so a ratio of two shown times differs from the shown ratio by up to three of those
ROUNDED = 2e-3


def test_the_answer_gives_each_model_s_time_by_length(registry):
    answer = sent(TimingBench(limit_s=10, repeats=2).timing(registry, [600, 5, 40]))  # 600: past max_len 512
    assert answer["lengths"] == [5, 40, 600] and answer["device"] == "cpu" and answer["torch_threads"] >= 1
    assert set(answer["timings"]) == set(answer["encoders"]) == set(answer["growth"]) == {"lstm", "transformer"}
    for rows in answer["timings"].values():
        assert [r["length"] for r in rows] == [5, 40, 600]
        assert all(r["median_ms"] > 0 and r["repeats"] == 2 for r in rows)
    assert answer["complete"]
    ms = {name: {r["length"]: r["median_ms"] for r in rows} for name, rows in answer["timings"].items()}
    assert answer["growth"]["lstm"] == pytest.approx(ms["lstm"][600] / ms["lstm"][5], rel=ROUNDED)
    assert answer["roles"] == {"recurrent": "lstm", "parallel": "transformer"}  # the first of each kind
    assert answer["parallel_longest_over_recurrent_shortest"] == pytest.approx(
        ms["transformer"][600] / ms["lstm"][5], rel=ROUNDED)
    assert answer["recurrent_over_parallel_longest"] == pytest.approx(
        ms["lstm"][600] / ms["transformer"][600], rel=ROUNDED)


def test_the_encoders_sizes_come_as_numbers_the_page_phrases(registry):
    answer = sent(TimingBench(limit_s=10, repeats=1).timing(registry, [5, 40]))
    sizes = answer["encoder_sizes"]
    assert sizes["lstm"]["cell"] == "lstm" and "heads" not in sizes["lstm"]
    assert sizes["transformer"]["cell"] == "transformer" and sizes["transformer"]["heads"] >= 1
    for name, size in sizes.items():  # the English `encoders` and the French page say the same numbers
        english = answer["encoders"][name]
        french = describe(EncoderSize(**size), Words("fr"))
        assert english.startswith(("LSTM encoder", "Transformer encoder")) and "encodeur" in french
        numbers = [str(v) for v in size.values() if isinstance(v, int)]
        assert all(n in english and n in french for n in numbers), (english, french)


def test_the_encoders_are_chosen_by_what_they_have_inside(registry):
    timings = TimingBench(limit_s=2, repeats=1)
    answer = sent(timings.timing(registry, [3, 6], recurrent="lstm-dot"))  # any model with an LSTM encoder
    assert answer["roles"] == {"recurrent": "lstm-dot", "parallel": "transformer"}
    assert set(answer["timings"]) == {"lstm-dot", "transformer"}
    for field, ask in (("recurrent", {"recurrent": "rnn"}), ("recurrent", {"recurrent": "transformer"}),
                       ("parallel", {"parallel": "lstm"})):
        with pytest.raises(InvalidOptionError) as error:
            timings.timing(registry, [3, 6], **ask)
        assert error.value.field == field


def test_a_kept_result_is_answered_again_until_refreshed(registry):
    timings = TimingBench(limit_s=5, repeats=1)
    first = timings.timing(registry, [3, 9])
    time.sleep(1.1)  # measured_at has whole seconds
    assert timings.timing(registry, [9, 3]) is first  # the same lengths, kept
    again = timings.timing(registry, [3, 9], refresh=True)
    assert again.measured_at > first.measured_at
    assert timings.timing(registry, [3, 9]) is again


class LooksThenWaits(OrderedDict):
    """Kept results that, the first time `reader` looks one up, let `evicted` happen before the
    answer goes back (up to 1 s): another request's eviction, right between looking and reading."""

    def __init__(self, reader: list, looked: threading.Event, evicted: threading.Event):
        super().__init__()
        self.reader, self.looked, self.evicted = reader, looked, evicted

    def _pause(self) -> None:
        if threading.current_thread() in self.reader and not self.looked.is_set():
            self.looked.set()
            self.evicted.wait(1)  # under a lock the eviction cannot happen now: the wait runs out

    def __contains__(self, key) -> bool:
        found = super().__contains__(key)
        self._pause()
        return found

    def get(self, key, default=None):
        found = super().get(key, default)
        self._pause()
        return found


def test_a_kept_result_evicted_while_it_is_read_is_still_answered(registry, monkeypatch):
    timings, reader, looked, evicted = TimingBench(), [], threading.Event(), threading.Event()
    monkeypatch.setattr(timings, "_measure", lambda registry, models, lengths: lengths)  # no model work
    timings._results = LooksThenWaits(reader, looked, evicted)
    timings.timing(registry, [3, 9])  # the oldest kept, the next one evicted
    for n in range(KEPT - 1):
        timings._results[("elsewhere", n)] = None

    def read():
        reader.append(threading.current_thread())
        return timings.timing(registry, [3, 9])

    with ThreadPoolExecutor(1) as pool:
        answer = pool.submit(read)
        assert looked.wait(10), "the reader never looked its result up"
        timings.timing(registry, [3, 10])  # one more kept: [3, 9] goes
        evicted.set()
        assert answer.result(timeout=10) == (3, 9)  # no KeyError (an HTTP 500)
    assert len(timings._results) == KEPT


def test_one_measurement_at_a_time(registry):
    timings, hold = TimingBench(limit_s=5, repeats=1), threading.Event()
    registry.jobs.thread.submit(hold.wait)  # the model thread is busy: the first measurement waits
    answers = []
    first = threading.Thread(target=lambda: answers.append(timings.timing(registry, [4, 8])))
    first.start()
    try:
        deadline = time.monotonic() + 10
        while not timings.status().running:
            assert time.monotonic() < deadline, "the first measurement did not start within 10 s"
            time.sleep(0.01)
        with pytest.raises(BusyError) as busy:
            timings.timing(registry, [4, 16])
        assert 1 <= busy.value.retry_after <= 5
        assert str(busy.value).startswith("a timing measurement is running")
    finally:  # the model thread is the session's: never leave it held
        hold.set()
        first.join(10)
    assert answers and not timings.status().running
    assert timings.status().done == timings.status().total == 4  # 2 models x 2 lengths x 1 repeat


def test_no_repeat_starts_after_the_limit(registry):
    start = time.monotonic()
    answer = sent(TimingBench(limit_s=0.0, repeats=50).timing(registry, [20, 200]))
    assert not answer["complete"] and answer["max_repeats"] == 50
    assert all(r["repeats"] == 1 for rows in answer["timings"].values() for r in rows)
    assert time.monotonic() - start < 5


def test_lengths_are_checked():
    assert check_lengths(None) == LENGTHS and check_lengths([7, 2, 7, 3]) == (2, 3, 7)
    for bad in ([5], [5, 5], [0, 10], [10, MAX_LENGTH + 1], list(range(1, MAX_LENGTHS + 2))):
        with pytest.raises(InvalidOptionError) as error:
            check_lengths(bad)
        assert error.value.field == "lengths"


def test_each_server_has_one_bench(registry, cached_registry):
    assert bench(registry) is bench(registry) and bench(registry) is not bench(cached_registry)


def test_the_endpoints(client):
    answer = client.post("/api/timing", json={"lengths": [2, 6]})
    assert answer.status_code == 200 and answer.json()["lengths"] == [2, 6]
    assert client.post("/api/timing", json={"lengths": [6, 2]}).json() == answer.json()  # kept
    status = client.get("/api/timing/status").json()
    assert status["running"] is False and status["elapsed_s"] is None and status["done"] == status["total"]
    refused = client.post("/api/timing", json={"lengths": [1, 2 * MAX_LENGTH]})
    assert refused.status_code == 422 and refused.json()["detail"][0]["loc"] == ["body", "lengths"]
    assert client.post("/api/timing", json={"lengths": ["a"]}).status_code == 422
    assert client.post("/api/timing").json()["lengths"] == list(LENGTHS)  # no body: the default lengths
    hold, registry = threading.Event(), client.app.state.registry
    registry.jobs.thread.submit(hold.wait)
    first = threading.Thread(target=lambda: client.post("/api/timing", json={"lengths": [2, 7]}))
    first.start()
    try:
        deadline = time.monotonic() + 10
        while not client.get("/api/timing/status").json()["running"]:
            assert time.monotonic() < deadline, "the first measurement did not start within 10 s"
            time.sleep(0.01)
        busy = client.post("/api/timing", json={"lengths": [2, 9]})
        assert busy.status_code == 429 and int(busy.headers["Retry-After"]) >= 1
        assert "GET /api/timing/status" in busy.json()["detail"]
    finally:
        hold.set()
        first.join(10)
