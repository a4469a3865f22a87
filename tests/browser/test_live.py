"""The bottleneck chapter's "train it yourself": a reader starts a run, sees the curves and the probe's
map grow, stops it, and the page reports what was measured, without a page error."""

from __future__ import annotations

import re

import httpx
import pytest

pytestmark = pytest.mark.browser

# True once, with the run still going, the loss and accuracy plots' sentences name each contestant's
# latest drawn step, and the map's sentence and open table say the map drawn now (its step, its weights).
IN_STEP = """async () => {
  const { fmt } = await import('/static/js/facts.js');
  const said = (el) => document.getElementById(el.getAttribute('aria-describedby') || '')?.textContent || '';
  const plot = (name) => document.querySelector(`[data-testid=${name}]`);
  const [loss, accuracy, map] = ['live-loss', 'live-accuracy', 'live-map-lstm-additive'].map(plot);
  const steps = accuracy.data.map((t) => t.x.at(-1));
  const table = map.parentElement.querySelector('.twin__table');
  const cells = [...table.querySelectorAll('tbody tr')]
    .map((tr) => [...tr.querySelectorAll('td')].map((td) => td.textContent));
  return document.documentElement.dataset.liveRunning === 'true'
    && steps.every((step) => said(loss).includes(`by step ${step}`))
    && steps.every((step) => said(accuracy).includes(`at step ${step}`))
    && said(accuracy).startsWith('Where they stood')
    && said(map).includes(`on the probe at ${map.querySelector('.gtitle').textContent},`)
    && said(map).includes(' looks at ')
    && JSON.stringify(cells) === JSON.stringify(map.data[0].z.map((row) => row.map(fmt)));
}"""


def test_a_reader_trains_watches_and_stops(open_page):
    page, problems = open_page("?ch=bottleneck&tl=5&tsteps=3000&tc=lstm,lstm-additive")
    page.get_by_test_id("live-start").scroll_into_view_if_needed()
    assert page.get_by_test_id("live-length").input_value() == "5"  # the URL's settings
    assert page.get_by_test_id("live-pick-lstm-additive").is_checked()
    assert not page.get_by_test_id("live-pick-transformer").is_checked()
    # the shipped reference: one line per contestant of the sweep, for the task shown
    reference = page.get_by_test_id("live-reference")
    reference.locator(".main-svg").first.wait_for()
    assert len(reference.evaluate("el => el.data.map(t => t.name)")) == 5
    page.get_by_test_id("live-start").click()
    # the curves and the map grow: several turns drawn, the map redrawn at a later step
    page.wait_for_selector("[data-testid=live-loss] .main-svg")
    page.wait_for_selector("[data-testid=live-map-lstm-additive] .main-svg")
    first = page.get_by_test_id("live-map-lstm-additive").locator(".gtitle").text_content()
    page.wait_for_function(
        "t => document.querySelector('[data-testid=live-map-lstm-additive] .gtitle')?.textContent !== t",
        arg=first)
    # while it streams, each figure's sentence and open table say what the figure draws now
    page.get_by_test_id("twin-live-map-lstm-additive").click()
    assert page.wait_for_function(IN_STEP, timeout=30_000).json_value()
    points = page.get_by_test_id("live-accuracy").evaluate("el => el.data.map(t => t.x.length)")
    assert len(points) == 2 and all(n >= 1 for n in points)
    assert page.get_by_test_id("live-stop").is_enabled()
    page.get_by_test_id("live-stop").click()
    page.wait_for_function("() => document.getElementById('live-start').disabled === false")
    stopped = page.get_by_test_id("live-status").inner_text()
    assert stopped.startswith("Stopped. Where they stood: lstm ") and "lstm-additive" in stopped
    assert "tl=5" in page.url and "tc=lstm%2Clstm-additive" in page.url
    assert problems.errors == [] and problems.dialogs == []


def test_a_finished_run_says_what_it_measured_and_stays_beside_the_next(open_page):
    page, problems = open_page("?tl=4&tsteps=40&tc=lstm,lstm-additive")
    page.get_by_test_id("live-start").scroll_into_view_if_needed()
    for _ in range(2):
        page.get_by_test_id("live-start").click()
        page.wait_for_function("() => document.documentElement.dataset.liveRunning === 'true'")
        page.wait_for_function("() => document.documentElement.dataset.liveRunning === ''", timeout=120_000)
    status = page.get_by_test_id("live-status").inner_text()
    assert status.startswith("Copying 4 symbols") and "after 40 steps" in status  # copy: the default task
    names = page.get_by_test_id("live-loss").evaluate("el => el.data.map(t => t.name)")
    assert names == ["lstm (previous run)", "lstm-additive (previous run)", "lstm", "lstm-additive"]
    assert problems.errors == []


def test_a_reader_waiting_in_line_is_told_their_place_then_trains(open_page, server):
    """Another client (127.0.0.2) holds the replica's one slot: the reader's run waits in line, the
    status says its place and expected start as the server streamed them, and the run starts once
    the slot is free."""
    page, problems = open_page("?tl=4&tsteps=40&tc=lstm,lstm-additive")
    page.get_by_test_id("live-start").scroll_into_view_if_needed()
    other = httpx.Client(transport=httpx.HTTPTransport(local_address="127.0.0.2"), timeout=60)
    with other, other.stream("POST", f"{server}/api/train", json={"length": 4, "steps": 3000}) as holding:
        assert holding.status_code == 200
        lines = holding.iter_lines()
        next(lines)  # the settings: the other run has the slot
        page.get_by_test_id("live-start").click()
        page.wait_for_function("() => document.getElementById('live-status').textContent.includes('in line')")
        said = page.get_by_test_id("live-status").inner_text()
        assert re.fullmatch(r"Another run has the training slot: yours is number 1 in line and should start "
                            r"in about \d+\ss\.", said), said
        assert httpx.get(f"{server}/api/train").json()["waiting"] == 1
    # the other client hung up: its slot is the reader's
    page.wait_for_function("() => document.getElementById('live-status').textContent.startsWith('Training ')")
    page.wait_for_function("() => document.documentElement.dataset.liveRunning === ''", timeout=120_000)
    assert page.get_by_test_id("live-status").inner_text().startswith("Copying 4 symbols")
    assert problems.errors == []
