"""The gradients chapter in the browser: every figure drawn, every number and every direction the prose states
equal to what the API measures, the controls in the URL."""

from __future__ import annotations

import statistics

import httpx
import pytest

from tests.browser.conftest import show

pytestmark = pytest.mark.browser
SUPERSCRIPT = str.maketrans("⁻⁰¹²³⁴⁵⁶⁷⁸⁹", "-0123456789")


def number(text: str) -> float:
    """A figure as the page prints it ("0.21", "1.1×10⁻¹³") as a float."""
    mantissa, _, exponent = text.translate(SUPERSCRIPT).partition("×10")
    return float(mantissa) * 10 ** int(exponent or 0)


def facts(page) -> dict[str, str]:
    return page.locator("#gradients [data-fact]").evaluate_all(
        "els => Object.fromEntries(els.map(e => [e.dataset.fact, e.textContent]))")


def wait_for_story(page, length: int) -> dict[str, str]:
    show(page, "gradient-plot")
    page.wait_for_function("n => document.querySelector('[data-fact=length]').textContent === String(n)",
                           arg=length)
    return facts(page)


def test_every_figure_of_the_chapter_is_drawn(open_page):
    page, problems = open_page("?len=30")
    assert show(page, "gradient-plot").evaluate("gd => gd.data.length") == 4  # two models, two weights
    assert show(page, "factor-plot").evaluate("gd => gd.data.length") == 4
    accuracy = show(page, "lag-accuracy")
    assert accuracy.evaluate("gd => gd.data.map(t => t.name)") == ["RNN", "LSTM"]
    page.wait_for_function("document.getElementById('lag-gradients').dataset.lag")
    assert show(page, "lag-gradients").evaluate("gd => gd.data.length") == 4
    assert show(page, "gates-plot").locator(".main-svg").count() > 0
    assert problems.errors == []


def test_the_prose_states_what_the_api_measures(open_page, server):
    """Each figure of the text is the API's number, and each "more"/"less" and "below/above 1"
    follows from those numbers: the text cannot claim a direction the data don't show."""
    page, problems = open_page("?len=30")
    shown = wait_for_story(page, 30)
    body = {"text": "Je mange du pain.", "length": 30, "initialized": True, "factors": True}
    answer = httpx.post(f"{server}/api/gradients", json=body).json()
    distance = int(shown["distance"])
    assert distance == min(40, 29)
    for role in ("plain", "gated"):
        name = shown[role]
        curves = {c["weights"]: c for c in answer["curves"] if c["model"] == name}
        reach = {w: c["norm"][distance] / c["norm"][0] for w, c in curves.items()}
        for weights in ("trained", "initialized"):
            assert number(shown[f"{role}-{weights}"]) == pytest.approx(reach[weights], rel=0.06)
        expected = "more" if reach["trained"] > reach["initialized"] else "less"
        assert shown[f"{role}-direction"] == expected
    plain = {c["weights"]: c for c in answer["curves"] if c["model"] == shown["plain"]}
    for weights, curve in plain.items():
        factor = statistics.median_low(curve["step_factor"])
        assert number(shown[f"plain-factor-{weights}"]) == pytest.approx(factor, rel=0.06)
        assert shown[f"plain-side-{weights}"].startswith("below 1" if factor < 1 else "above 1")
        shrink = statistics.median_low(curve["shrink"])
        assert number(shown[f"plain-shrink-{weights}"]) == pytest.approx(shrink, rel=0.06)
    assert problems.errors == []


def test_the_long_lag_controls_live_in_the_url(open_page, server):
    results = httpx.get(f"{server}/api/long-lag").json()
    noise_lags = sorted({r["lag"] for r in results["runs"] if r["filler"] == "noise"})
    page, problems = open_page(f"?filler=noise&lag={noise_lags[1]}")
    show(page, "lag-accuracy")
    assert page.get_by_test_id("lag-filler").input_value() == "noise"
    page.wait_for_function("n => document.getElementById('lag-gradients').dataset.lag === String(n)",
                           arg=noise_lags[1])
    page.get_by_test_id("lag-pick").select_option(str(noise_lags[-1]))
    page.wait_for_function("n => document.getElementById('lag-gradients').dataset.lag === String(n)",
                           arg=noise_lags[-1])
    assert f"lag={noise_lags[-1]}" in page.url and "filler=noise" in page.url
    # the prose says where each cell falls to chance, as measured
    said = facts(page)
    lags = results["chance_lag"]["noise"]
    tried = max(r["lag"] for r in results["runs"] if r["filler"] == "noise")
    for cell, lag in lags.items():
        expected = f"a lag of {lag}" if lag is not None else f"no lag tried (up to {tried})"
        assert said[f"lag-noise-{cell}"] == expected
    beyond = tried + 1
    rnn, lstm = (lags[c] if lags[c] is not None else beyond for c in ("rnn", "lstm"))
    longer = "the RNN holds out longer" if rnn > lstm else "the LSTM holds out longer" if lstm > rnn else "both"
    assert said["lag-noise-holds"].startswith(longer)
    page.get_by_test_id("factor-view").select_option("forget_mean")
    page.wait_for_function("document.getElementById('factor-plot').dataset.factor === 'forget_mean'")
    assert "factor=forget_mean" in page.url
    assert problems.errors == []
