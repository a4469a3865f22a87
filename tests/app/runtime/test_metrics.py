"""GET /metrics: Prometheus's text format, with the figures an operator scales and alerts on, each
checked against what the server did."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
from fastapi.testclient import TestClient
from prometheus_client.parser import text_string_to_metric_families

from app.main import create_app
from tests.app.conftest import TEXT, tiny_settings

LIMIT = 2


def samples(client: TestClient) -> dict[tuple[str, tuple], float]:
    """(sample name, sorted labels) -> value, from a scrape."""
    answer = client.get("/metrics")
    assert answer.status_code == 200 and answer.headers["content-type"].startswith("text/plain")
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(answer.text) for s in family.samples}


@pytest.fixture
def app(tiny_checkpoints):
    return create_app(tiny_settings(tiny_checkpoints, queue_limit=LIMIT, cache_size=16))


def test_latency_by_route_template_and_the_model_thread_s_work(app):
    with TestClient(app) as client:
        app.state.ahead.join(timeout=60)
        before = samples(client)
        client.get("/api/models/rnn/curve")
        client.get("/api/models/gpt/curve")  # 404: the same template
        lines = client.post("/api/compare", json={"text": "Il neige ce matin."}).text.splitlines()
        assert len(lines) == len(app.state.registry.names)
        client.post("/api/translate", json={"text": "Il neige ce matin.", "model": "rnn"})  # cached by compare
        after = samples(client)
    curve = "/api/models/{name}/curve"
    assert after[("attention_lab_request_duration_seconds_count",
                  (("method", "GET"), ("route", curve), ("status", "200")))] == 1
    assert after[("attention_lab_request_duration_seconds_count",
                  (("method", "GET"), ("route", curve), ("status", "404")))] == 1
    compared = (("method", "POST"), ("route", "/api/compare"), ("status", "200"))
    assert after[("attention_lab_request_duration_seconds_count", compared)] == 1
    assert after[("attention_lab_request_duration_seconds_sum", compared)] > 0
    # compare's models each stepped its sentence alone (nothing to batch it with), one step per
    # piece it read, after one wait for its first step; the translation came from the cache
    for name in app.state.registry.names:
        model = (("model", name),)
        series = {kind: (f"attention_lab_model_batch_size_{kind}", model) for kind in ("count", "sum")}
        steps = {kind: after[key] - before.get(key, 0) for kind, key in series.items()}
        assert steps["count"] >= 1 and steps["sum"] == steps["count"]
        waited = ("attention_lab_model_first_step_seconds_count", model)
        assert after[waited] - before.get(waited, 0) == 1
    busy = "attention_lab_model_busy_seconds_total", ()
    assert after[busy] > before[busy]
    hits = ("attention_lab_cache_lookups_total", (("result", "hit"),))
    assert after[hits] > before[hits]
    assert after[("attention_lab_model_queue_depth", ())] == 0
    assert after[("attention_lab_requests_in_flight", ())] == 0
    assert after[("attention_lab_requests_limit", ())] == LIMIT
    assert after[("attention_lab_training_slots", (("state", "total"),))] == 1


def test_queue_depth_in_flight_and_refusals_while_the_model_thread_is_busy(app):
    with TestClient(app) as client, ThreadPoolExecutor(LIMIT) as pool:
        app.state.ahead.join(timeout=60)
        release = threading.Event()
        blocker = app.state.registry.jobs.thread.submit(release.wait, 30)
        waiting = [pool.submit(client.post, "/api/translate", json={"text": f"Bonjour {i}.", "model": "rnn"})
                   for i in range(LIMIT)]
        deadline = time.monotonic() + 10
        while samples(client)[("attention_lab_requests_in_flight", ())] < LIMIT:
            assert time.monotonic() < deadline
            time.sleep(0.02)
        try:
            assert client.post("/api/translate", json={"text": "Encore.", "model": "rnn"}).status_code == 503
            busy = samples(client)
        finally:
            release.set()
        blocker.result(timeout=10)
        assert [w.result(timeout=30).status_code for w in waiting] == [200] * LIMIT
    assert busy[("attention_lab_model_queue_depth", ())] == LIMIT  # the two translations behind the blocker
    assert busy[("attention_lab_requests_refused_total", ())] == 1


def test_a_superseded_compare_is_counted(app):
    with TestClient(app) as client:
        app.state.ahead.join(timeout=60)
        for text in ("Je", "Je mange", TEXT):
            client.post("/api/compare", json={"text": text}, headers={"X-Supersede-Key": "visit-1"})
        # one after another, each had finished before the next: nothing to supersede
        assert samples(client)[("attention_lab_requests_superseded_total", ())] == 0
        release = threading.Event()
        blocker = app.state.registry.jobs.thread.submit(release.wait, 30)
        with ThreadPoolExecutor(2) as pool:
            older = pool.submit(client.post, "/api/compare", json={"text": "Il pleut."},
                                headers={"X-Supersede-Key": "visit-1"})
            deadline = time.monotonic() + 10
            while samples(client)[("attention_lab_requests_in_flight", ())] < 1:
                assert time.monotonic() < deadline
                time.sleep(0.02)
            newer = pool.submit(client.post, "/api/compare", json={"text": "Il pleut fort."},
                                headers={"X-Supersede-Key": "visit-1"})
            # the newer one has arrived once it superseded the older (which then ends at once, so
            # the two need not be seen in flight together)
            while samples(client)[("attention_lab_requests_superseded_total", ())] < 1:
                assert time.monotonic() < deadline
                time.sleep(0.02)
            release.set()
            blocker.result(timeout=10)
            older.result(timeout=30), newer.result(timeout=30)
        assert samples(client)[("attention_lab_requests_superseded_total", ())] == 1


def test_compare_says_how_busy_the_model_thread_was(app):
    with TestClient(app) as client:
        app.state.ahead.join(timeout=60)
        assert client.post("/api/compare", json={"text": TEXT}).headers["x-queue-depth"] == "0"
