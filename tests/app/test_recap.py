"""POST /api/recap (chapter 11's rows measured on a sentence) and the answers computed ahead at
start-up (app/services/ahead.py), on the tiny models."""

from __future__ import annotations

import asyncio
import re

from app.services import ahead
from app.services.loading import load_registry
from app.services.recap import fmt
from tests.app.contract import assert_recap_is_the_chapters

TEXT = "Je mange du pain."


def test_the_recap_has_a_measured_number_for_every_chapter_of_the_sentence(client):
    answer = client.post("/api/recap", json={"text": TEXT}).json()
    assert set(answer) == {"rows"}  # the text is not echoed
    assert [row["chapter"] for row in answer["rows"]] == [2, 3, 5, 6, 7, 8, 10]
    for row in answer["rows"]:
        assert re.search(r"\d", row["text"]), row


def test_each_row_is_the_number_its_chapter_measures(client):
    rows = {r["chapter"]: r["text"] for r in client.post("/api/recap", json={"text": TEXT}).json()["rows"]}
    recurrence = client.post("/api/recurrence", json={"text": TEXT}).json()
    most = max(range(len(recurrence["change"])), key=recurrence["change"].__getitem__)
    assert f"= {fmt(recurrence['change'][most])})" in rows[2]
    order = client.post("/api/order", json={"text": TEXT, "seed": 1}).json()
    assert f"on, by {fmt(order['checks']['pe_on']['max_abs_difference'])}." in rows[8]
    pieces = len(recurrence["tokens"])
    assert f"{pieces} steps one after another" in rows[6]


def test_every_number_in_the_recap_is_the_chapters_own(client):
    assert_recap_is_the_chapters(client, TEXT)


def test_the_recap_refuses_what_the_chapters_refuse(client):
    assert client.post("/api/recap", json={"text": "  "}).status_code == 422
    assert client.post("/api/recap", json={"text": TEXT, "other": 1}).status_code == 422


def test_fmt_writes_numbers_as_the_page_does():
    assert [fmt(x) for x in (0.9976, 11.2, 3.3e-7, 0.5, 12345, None)] == [
        "1.0", "11", "3.3×10⁻⁷", "0.50", "1.2×10⁴", "–"]


def test_the_first_visit_is_every_chapter_in_reading_order(tiny_checkpoints):
    with load_registry(tiny_checkpoints, device="cpu", cache_size=0) as registry:
        paths = [path for path, _ in ahead.first_visit(registry)]
    assert paths == ["/api/compare", "/api/recurrence", "/api/gradients", "/api/scores", "/api/scores",
                     "/api/scaling", "/api/order", "/api/heads", "/api/predict", "/api/recap"]


def test_answers_computed_ahead_are_in_the_cache(tiny_checkpoints):
    with load_registry(tiny_checkpoints, device="cpu", cache_size=64) as registry:
        asks = ahead.first_visit(registry)
        assert asyncio.run(ahead.ask_all(ahead.InProcess(registry), asks)) == len(asks)
        assert len(registry.jobs.cache) > 0
    with load_registry(tiny_checkpoints, device="cpu", cache_size=0) as registry:
        assert ahead.start(registry) is None
