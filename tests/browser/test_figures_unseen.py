"""Every figure readable without seeing it (static/js/twins.js): each Plotly figure is described by a
sentence (aria-describedby) and has a table twin behind a "Show the numbers" button, both carrying
the numbers the API answered, with the page's rounding; a heatmap's cells are read by keyboard, and
Escape and Tab leave it; axe-core finds nothing against WCAG 2.2 A/AA while the page loads and once
it has loaded, on a desktop and a phone."""

from __future__ import annotations

import json
import math
import re
from decimal import ROUND_HALF_UP, Context, Decimal
from pathlib import Path
from urllib.parse import urlparse

import httpx
import pytest

from tests.browser.conftest import UPDATE_TIMEOUT_MS, Problems, show_everything, shown

ROOT = Path(__file__).resolve().parents[2]
AXE = ROOT / "node_modules" / "axe-core" / "axe.min.js"
WCAG = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "wcag22aa"]
# asked again from Python to know the API's numbers; a live training run is not asked twice
NOT_ASKED_AGAIN = {("POST", "/api/train")}
SUPERSCRIPT = str.maketrans("⁻⁰¹²³⁴⁵⁶⁷⁸⁹", "-0123456789")
NUMBER = re.compile(r"-?\d+(?:\.\d+)?(?:×10[⁻⁰¹²³⁴⁵⁶⁷⁸⁹]+)?%?")

pytestmark = pytest.mark.browser


def fixed(x: float, digits: int) -> str:
    """JavaScript's toFixed: the exact binary value rounded, a tie away from zero (Python's rounds to even)."""
    return str(Decimal(x).quantize(Decimal(1).scaleb(-digits), rounding=ROUND_HALF_UP))


def precision(x: float, digits: int) -> str:
    """JavaScript's toPrecision for numbers between 1e-3 and 1e4, ties away from zero."""
    rounded = Context(prec=digits, rounding=ROUND_HALF_UP).plus(Decimal(x))
    return format(rounded.quantize(Decimal(1).scaleb(rounded.adjusted() - digits + 1)), "f")


def fmt(x: float) -> str:
    """static/js/facts.js's fmt: two significant digits, very small or large numbers as 1.1×10⁻¹³."""
    if not math.isfinite(x):
        return "–"
    if x != 0 and (abs(x) < 1e-3 or abs(x) >= 1e4):
        mantissa, exponent = f"{x:.1e}".split("e")
        return f"{mantissa}×10{str(int(exponent)).translate(str.maketrans('-0123456789', '⁻⁰¹²³⁴⁵⁶⁷⁸⁹'))}"
    return fixed(x, 0) if x >= 10 else precision(x, 2)


def said(value) -> set[str]:
    """Every way the page writes one number of an answer: fmt, whole, percentage, fixed decimals, minutes."""
    if isinstance(value, bool):
        return set()
    # seconds are also written in minutes (the training curves' time axis)
    found = {fmt(value), fmt(value / 60), f"{round(100 * value)}%", *(fixed(value, d) for d in (1, 2, 3))}
    if float(value).is_integer():
        found.add(str(int(value)))
    return found


def numbers_in(answer) -> set[str]:
    if isinstance(answer, (int, float)) and not isinstance(answer, bool):
        return said(answer)
    if isinstance(answer, dict):
        answer = answer.values()
    if isinstance(answer, (list, tuple)) or hasattr(answer, "__iter__") and not isinstance(answer, str):
        return set().union(*(numbers_in(item) for item in answer)) if answer else set()
    return set()


def api_numbers(server: str, requests: list[dict]) -> set[str]:
    """The numbers of every answer the page was given, asked again from Python with the same request."""
    found: set[str] = set()
    seen = set()
    for request in requests:
        key = (request["method"], request["url"], request["body"])
        if key in seen or (request["method"], urlparse(request["url"]).path) in NOT_ASKED_AGAIN:
            continue
        seen.add(key)
        body = json.loads(request["body"]) if request["body"] else None
        reply = httpx.request(request["method"], request["url"], json=body, timeout=120)
        if reply.status_code != 200:
            continue
        for line in reply.text.splitlines():  # a stream (compare) answers a JSON document a line
            if line.strip():
                found |= numbers_in(json.loads(line))
    return found


def recording(page) -> list[dict]:
    """Every API request the page makes from now on: method, URL, body."""
    requests: list[dict] = []
    page.on("request", lambda r: "/api/" in r.url and requests.append(
        {"method": r.method, "url": r.url, "body": r.post_data}))
    return requests


FIGURES = """() => [...document.querySelectorAll('.plot')].map((p, index) => {
    const described = p.getAttribute('aria-describedby');
    const sentence = described ? document.getElementById(described) : null;
    return { index, drawn: p.dataset.state === 'drawn', id: p.id || p.dataset.testid,
             heatmaps: (p.data || []).filter((t) => t.type === 'heatmap').length,
             sentence: sentence ? sentence.textContent : null };
}).filter((f) => f.drawn)"""

TABLE = """(button) => {
    const table = document.getElementById(button.getAttribute('aria-controls'));
    return { hidden: table.hidden, caption: table.caption ? table.caption.textContent : null,
             scoped: [...table.querySelectorAll('th')].every((th) => th.scope === 'col' || th.scope === 'row'),
             cells: [...table.querySelectorAll('td')].map((td) => td.textContent) };
}"""


def figure_numbers(page, plot) -> set[str]:
    """The numbers of the answer this figure was drawn from: what its "Download the numbers" button gives."""
    with page.expect_download() as download:
        plot.locator("xpath=following-sibling::button[contains(@class, 'numbers')][1]").click()
    return numbers_in(json.loads(Path(download.value.path()).read_text()))


@pytest.fixture(scope="module")
def drawn(chromium, server):
    """(page, problems, requests): `/` at 1280 px loaded once, in a browser context of its own, with
    every figure drawn and every API request recorded from the first: drawing the whole page is most of
    a browser test's time. The tests that only read it and move the focus share it."""
    context, page = shown(chromium, server)
    problems = Problems(page)
    requests = recording(page)
    page.goto(f"{server}/")
    page.wait_for_function("window.attentionLab && window.attentionLab.lastUpdate !== null")
    show_everything(page)
    page.wait_for_timeout(300)
    yield page, problems, requests
    context.close()


def test_every_figure_has_its_own_sentence_and_table_with_the_apis_numbers(drawn, server):
    """Each Plotly figure, on every chapter: its sentence writes a number of the answer that figure was
    drawn from, its table's every number is one of that answer's, with the page's rounding, and that
    answer's numbers are the API's own (asked again from Python)."""
    page, problems, requests = drawn
    known = api_numbers(server, requests)
    figures = page.evaluate(FIGURES)
    assert len(figures) >= 15, figures
    assert sum(f["heatmaps"] > 1 for f in figures) >= 2  # figures of several maps are among them
    sentences = {}
    for figure in figures:
        plot = page.locator(".plot").nth(figure["index"])
        sentence = figure["sentence"]
        assert sentence and len(sentence) > 20, figure
        own = figure_numbers(page, plot)
        assert own and own <= known, (figure["id"], sorted(own - known)[:10])
        written = set(NUMBER.findall(sentence))
        assert written & own, (figure["id"], sentence)
        twin = plot.locator("xpath=following-sibling::div[contains(@class, 'twin')][1]")
        button = twin.locator("button.twin__toggle")
        assert button.count() == 1, figure
        assert button.get_attribute("aria-expanded") == "false"
        assert button.evaluate(TABLE)["hidden"]
        button.click()
        assert button.get_attribute("aria-expanded") == "true"
        table = button.evaluate(TABLE)
        assert not table["hidden"] and table["caption"] and table["scoped"], (figure["id"], table)
        numeric = [number for cell in table["cells"] for number in NUMBER.findall(cell)]
        assert numeric, (figure["id"], table)
        missing = [cell for cell in numeric if cell not in own]
        assert not missing, (figure["id"], missing[:10])
        button.click()
        assert button.evaluate(TABLE)["hidden"]
        sentences.setdefault(sentence, []).append(figure["id"])
    shared = {sentence: ids for sentence, ids in sentences.items() if len(ids) > 1}
    assert not shared, shared  # each figure says its own
    # one polite word for the round, never one per figure
    assert page.locator("#round-said").text_content() == "Updated for: Je mange du pain."
    assert problems.errors == []


def test_a_heatmap_is_read_by_keyboard_and_lets_go(drawn):
    page, problems, _ = drawn
    page.get_by_test_id("source").focus()
    for _ in range(400):  # Tab only, from the text box, to the first heatmap
        page.keyboard.press("Tab")
        if page.evaluate("document.activeElement.getAttribute('role') === 'application'"):
            break
    else:
        pytest.fail("Tab never reached a heatmap")
    page.evaluate("window.heatmap = document.activeElement")
    assert page.evaluate("getComputedStyle(document.activeElement).outlineStyle") != "none"
    read = []
    for key in ["ArrowRight", "ArrowDown", "ArrowRight", "ArrowDown"]:
        page.keyboard.press(key)
        read.append(page.locator("#cell-said").text_content())
    assert len(set(read)) >= 3, read
    assert all(re.fullmatch(r".+, .+, " + NUMBER.pattern, text) for text in read), read
    page.keyboard.press("Escape")
    assert not page.evaluate("window.heatmap.contains(document.activeElement)")
    page.keyboard.press("Tab")  # on from there: not back into the heatmap, not lost on the body
    assert not page.evaluate("window.heatmap.contains(document.activeElement)")
    assert page.evaluate("document.activeElement !== document.body")
    # a figure of four maps: Page Down passes to the next map, each read by name
    maps = page.get_by_test_id("order-maps")
    maps.focus()
    said = []
    for key in ["ArrowRight", "PageDown", "ArrowDown", "PageDown", "PageUp"]:
        page.keyboard.press(key)
        said.append(page.locator("#cell-said").text_content())
    names = [text.split(": ")[0] for text in said]
    assert names[0] != names[1] != names[3] and names[4] == names[1], said
    assert all(re.fullmatch(r".+: .+, .+, " + NUMBER.pattern, text) for text in said), said
    assert problems.errors == []


# every control a chapter offers, shown and enabled: what the Tab walk must reach
NAME = "e.dataset.testid || e.id || e.getAttribute('aria-label') || e.textContent.trim().slice(0, 40)"
CONTROLS = """() => [...document.querySelectorAll(
        'main section[data-chapter] :is(input, select, button, textarea)')]
    .filter((e) => !e.disabled && e.offsetParent && e.tabIndex >= 0 && !e.closest('[hidden]'))
    .filter((e) => e.type !== 'radio' || e.checked)  // Tab reaches a radio group once; arrows pick in it
    .map((e) => ({ chapter: e.closest('section[data-chapter]').dataset.chapter,
                   name: NAME }))""".replace("NAME", NAME)
FOCUSED = """() => { const e = document.activeElement; const s = e.closest('section[data-chapter]');
    return { chapter: s ? s.dataset.chapter : null, box: e.dataset.testid === 'source',
             heatmap: e.getAttribute('role') === 'application', name: NAME }; }""".replace("NAME", NAME)


def test_tab_alone_reaches_every_chapters_controls_and_its_heatmaps_and_comes_back(drawn):
    """From the text box, Tab alone visits every chapter's controls and a heatmap in each chapter that
    draws one, and comes round to the text box again: nothing holds the focus."""
    page, problems, _ = drawn
    wanted = page.evaluate(CONTROLS)
    heat_chapters = set(page.evaluate("""() => [...document.querySelectorAll('.plot[role=application]')]
        .map((p) => p.closest('section[data-chapter]').dataset.chapter)"""))
    assert len({c["chapter"] for c in wanted}) >= 8 and heat_chapters
    page.get_by_test_id("source").focus()
    seen, heatmaps, back = set(), set(), False
    for _ in range(3000):
        page.keyboard.press("Tab")
        here = page.evaluate(FOCUSED)
        if here["box"]:
            back = True
            break
        seen.add((here["chapter"], here["name"]))
        if here["heatmap"]:
            heatmaps.add(here["chapter"])
    assert back, "Tab never came back round to the text box"
    missed = [c for c in wanted if (c["chapter"], c["name"]) not in seen]
    assert not missed, missed[:10]
    assert heatmaps == heat_chapters
    assert problems.errors == []


AUDIT = """async (tags) => {
    const only = { runOnly: { type: 'tag', values: tags }, resultTypes: ['violations'] };
    const result = await axe.run(document, only);
    return { passed: result.passes.length, violations: result.violations.map((v) => ({ id: v.id, help: v.help,
        nodes: v.nodes.slice(0, 5).map((n) => n.target.join(' ') + ': ' + n.failureSummary.slice(0, 200)) })) };
}"""


@pytest.mark.parametrize("width", [1280, 390])
def test_axe_finds_nothing_while_loading_and_loaded(browser_page, server, width):
    """"Just show me": every figure drawn, a table twin open."""
    if not AXE.exists():
        pytest.skip(f"{AXE.relative_to(ROOT)} is missing: `make install` installs it (npm ci)")
    page, problems = browser_page
    page.unroute_all(behavior="ignoreErrors")
    page.set_viewport_size({"width": width, "height": 900 if width > 800 else 844})
    problems.clear()
    page.goto(f"{server}/", wait_until="domcontentloaded")
    page.add_script_tag(path=str(AXE))
    loading = page.evaluate(AUDIT, WCAG)
    page.wait_for_function("window.attentionLab && window.attentionLab.lastUpdate !== null")
    show_everything(page)
    page.locator(".twin__toggle").first.click()  # a table twin open: its markup is audited too
    loaded = page.evaluate(AUDIT, WCAG)
    assert loading["passed"] > 10 and loaded["passed"] > 10  # axe did check the page
    assert loading["violations"] == [], loading
    assert loaded["violations"] == [], loaded
    assert problems.errors == []


@pytest.mark.parametrize("width", [1280, 390])
def test_axe_finds_nothing_while_the_questions_wait(chromium, server, width):
    """"Ask me first", a first visit's mode: every question posed, its chapter hidden and the claims'
    verdicts replaced by the line that says they wait for the answer."""
    if not AXE.exists():
        pytest.skip(f"{AXE.relative_to(ROOT)} is missing: `make install` installs it (npm ci)")
    context = chromium.new_context(viewport={"width": width, "height": 900 if width > 800 else 844},
                                   bypass_csp=True)
    page = context.new_page()
    page.set_default_timeout(UPDATE_TIMEOUT_MS)
    problems = Problems(page)
    try:
        page.goto(f"{server}/", wait_until="domcontentloaded")
        page.add_script_tag(path=str(AXE))
        loading = page.evaluate(AUDIT, WCAG)
        page.wait_for_function("window.attentionLab && window.attentionLab.lastUpdate !== null")
        assert page.get_by_test_id("question-mode-ask").is_checked()
        for chapter in page.locator("section[data-posed='sentence'], section[data-posed='fixed']").evaluate_all(
                "els => els.map((e) => e.dataset.chapter)"):
            card = page.locator(f"[data-question='{chapter}']")
            card.scroll_into_view_if_needed()  # a question asks when near, like a figure
            page.wait_for_selector(f"[data-question='{chapter}'] button[data-choice]:not([disabled]),"
                                   f" [data-question='{chapter}'][hidden]", state="attached")
        assert page.locator("[data-verdict-hidden] .chapter__verdict-wait").count() >= 1
        asking = page.evaluate(AUDIT, WCAG)
        assert loading["passed"] > 10 and asking["passed"] > 10
        assert loading["violations"] == [], loading
        assert asking["violations"] == [], asking
        assert problems.errors == []
    finally:
        context.close()
