"""The log: one line per request with its status, duration and id, and no traceback for work that
nobody wanted any more."""

from __future__ import annotations

import logging
import re

import pytest

from app.runtime.errors import Abandoned
from models.decoding import Stopped

LINE = re.compile(r"^(GET|POST) (\S+) (\d{3}) (\d+\.\d) ms id=([A-Za-z0-9._-]+)$")


def request_lines(caplog) -> list[re.Match]:
    return [LINE.match(r.getMessage()) for r in caplog.records if r.name == "attention_lab.requests"]


def test_each_request_is_one_line_with_its_status_duration_and_id(client, caplog):
    caplog.set_level(logging.INFO, logger="attention_lab")
    ok = client.post("/api/translate", json={"text": "Je mange.", "model": "rnn"})
    bad = client.post("/api/translate", json={"text": "", "model": "rnn"},
                      headers={"X-Request-Id": "reader-42"})
    odd = client.get("/api/health", headers={"X-Request-Id": "<script>"})
    streamed = client.post("/api/compare", json={"text": "Je mange.", "models": ["rnn", "lstm"]})
    assert (ok.status_code, bad.status_code, odd.status_code, streamed.status_code) == (200, 422, 200, 200)
    lines = request_lines(caplog)
    assert all(lines) and len(lines) == 4
    assert [(m[1], m[2], m[3]) for m in lines] == [
        ("POST", "/api/translate", "200"), ("POST", "/api/translate", "422"), ("GET", "/api/health", "200"),
        ("POST", "/api/compare", "200")]
    assert lines[1][5] == "reader-42" == bad.headers["x-request-id"]  # the client's own id, echoed
    made = odd.headers["x-request-id"]  # "<script>" is not a plain token: replaced
    assert re.fullmatch(r"[0-9a-f]{8}", made) and lines[2][5] == made
    assert ok.headers["x-request-id"] != streamed.headers["x-request-id"]


@pytest.mark.parametrize("error", [Abandoned(), Stopped()])
def test_work_nobody_wanted_is_a_line_and_a_count_not_a_traceback(client, monkeypatch, caplog, error):
    caplog.set_level(logging.INFO, logger="attention_lab")

    def job(*args, **kwargs):
        def dropped():
            raise error
        return ("dropped", type(error).__name__, id(error)), dropped

    before = client.get("/api/health").json()["dropped"]
    monkeypatch.setattr("app.routes.maps.attention_maps_job", job)
    assert client.post("/api/attention", json={"text": "Je mange.", "model": "transformer"}).status_code == 499
    after = client.get("/api/health").json()["dropped"]
    kind = "skipped" if isinstance(error, Abandoned) else "stopped"
    assert after[kind] == before[kind] + 1
    assert not [r for r in caplog.records if r.exc_info or r.levelno >= logging.WARNING]
    assert [m[3] for m in request_lines(caplog) if m[2] == "/api/attention"] == ["499"]
