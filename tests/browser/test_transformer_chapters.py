"""Chapters 7 to 10 in the browser, on the tiny models: each chapter opens from a shared URL and
draws its figures for the typed sentence, its controls work and live in the URL, and every number
its prose states is the API's own."""

from __future__ import annotations

import httpx
import pytest

from tests.browser.conftest import show
from tests.browser.test_chapters import chapter_in_url, facts, in_view
from tests.browser.test_vanishing import number

pytestmark = pytest.mark.browser
SENTENCE = "Je mange du pain."


def post(server: str, path: str, body: dict) -> dict:
    answer = httpx.post(f"{server}{path}", json={"text": SENTENCE, **body}, timeout=60)
    answer.raise_for_status()
    return answer.json()


def test_chapter_7_states_the_saturation_the_api_measured(open_page, server):
    page, problems = open_page("?ch=7")
    assert in_view(page, "7")
    curves = show(page, "scaling-curves")
    answer = post(server, "/api/scaling", {})
    sampled = answer["sampled"]
    assert curves.evaluate("gd => gd.layout.xaxis.type") == "log"
    assert curves.evaluate("gd => gd.data[0].y") == [r["max_weight"] for r in sampled["unscaled"]]
    assert curves.evaluate("gd => gd.data[1].y") == [r["max_weight"] for r in sampled["scaled"]]
    assert curves.evaluate("gd => gd.dataset.dk") == str(answer["d_k"])
    heads = show(page, "scaling-heads")
    assert heads.evaluate("gd => gd.data[0].y") == [h["raw_std"] for h in answer["heads"]]
    page.wait_for_function("document.querySelector('#scaling-story [data-fact=d-k]').textContent !== ''")
    said = facts(page, "scaling-story")
    assert said["d-k"] == str(answer["d_k"])
    at = sampled["at_model_d_k"]
    assert number(said["raw-max"]) == pytest.approx(at["unscaled"]["max_weight"], rel=0.06)
    assert number(said["scaled-max"]) == pytest.approx(at["scaled"]["max_weight"], rel=0.06)
    bigger = at["scaled"]["gradient"] > at["unscaled"]["gradient"]
    assert said["gradient-direction"] == ("larger" if bigger else "smaller")
    assert f"d_k = {answer['d_k']}" in page.locator("[data-recap='7']").inner_text()
    chapter_in_url(page, "7")
    assert problems.errors == []


def drawn_permutation(page, permutation: list[int]) -> None:
    page.wait_for_function("p => document.getElementById('order-maps').dataset.permutation === p",
                           arg=",".join(map(str, permutation)))


def test_chapter_8_shuffles_and_states_both_differences(open_page, server):
    page, problems = open_page("?ch=8")
    show(page, "order-maps")
    answer = post(server, "/api/order", {"seed": 1})
    drawn_permutation(page, answer["permutation"])
    page.wait_for_function("document.querySelector('#order-story [data-fact=permutation]').textContent !== ''")
    said = facts(page, "order-story")
    off, on = (answer["checks"][c]["max_abs_difference"] for c in ("pe_off", "pe_on"))
    assert off < 1e-5 < on, "the permutation identity holds without positional encoding only"
    assert number(said["off-difference"]) == pytest.approx(off, rel=0.06)
    assert number(said["on-difference"]) == pytest.approx(on, rel=0.06)
    assert said["off-verdict"].startswith("float rounding") and said["on-verdict"].startswith("far above")
    assert said["on-shuffled"] == answer["translations"]["pe_on"]["shuffled"]
    maps = page.get_by_test_id("order-maps")
    assert maps.evaluate("gd => gd.data[1].z") == answer["checks"]["pe_off"]["shuffled"][0]
    table = show(page, "order-pe")
    assert table.evaluate("gd => gd.data[1].z") == answer["positional_encoding"]["similarity"]
    page.get_by_test_id("order-shuffle").click()
    page.wait_for_function("new URLSearchParams(location.search).get('shuffle') === '2'")
    drawn_permutation(page, post(server, "/api/order", {"seed": 2})["permutation"])
    assert "shuffled" in page.locator("[data-recap='8']").inner_text()
    assert problems.errors == []


def test_chapter_8_restores_its_seed_and_head_from_the_url(open_page, server):
    page, problems = open_page("?ch=8&shuffle=3&ohead=1")
    assert in_view(page, "8")
    maps = show(page, "order-maps")
    answer = post(server, "/api/order", {"seed": 3})
    drawn_permutation(page, answer["permutation"])
    assert page.get_by_test_id("order-head").input_value() == "1"
    assert maps.evaluate("gd => gd.dataset.head") == "1"
    assert maps.evaluate("gd => gd.data[2].z") == answer["checks"]["pe_on"]["original"][1]
    assert problems.errors == []
