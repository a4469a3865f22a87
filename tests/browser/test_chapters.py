"""The chapters' frame in the browser: the nav and a shared URL open each chapter, which draws its
figures for the typed sentence; the controls of the training, recurrence, attention and parallel
chapters work (by keyboard where a reader would use it) and live in the URL; each figure's numbers
download as the API's own JSON."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeout

from app.chapters import CHAPTERS
from tests.browser.conftest import UPDATE_TIMEOUT_MS, painted, show
from tests.browser.test_vanishing import number

pytestmark = pytest.mark.browser
SENTENCE = "Je mange du pain."
TIMING_LENGTHS = [4, 8]  # the tiny models, two short lengths: the measurement takes a moment


def aligning(catalog) -> list[str]:
    return [m["name"] for m in catalog if m["recurrent"] and m["cross_attention"]]


def figures(catalog) -> dict[str, list[str]]:
    """Chapter -> the plots it draws on open (app/chapters.py; the parallel chapter's empty state until
    measured)."""
    first = aligning(catalog)[0]
    return {c.slug: [f.format(aligning=first) for f in c.opens] for c in CHAPTERS}


def chapter_in_url(page, chapter: str) -> None:
    page.wait_for_function("n => new URLSearchParams(location.search).get('ch') === n", arg=chapter)


def in_view(page, chapter: str) -> bool:
    return page.locator(f"section[data-chapter='{chapter}']").evaluate(
        "s => { const b = s.getBoundingClientRect(); return b.top < innerHeight && b.bottom > 0; }")


def facts(page, story: str) -> dict[str, str]:
    return page.locator(f"#{story} [data-fact]").evaluate_all(
        "els => Object.fromEntries(els.map(e => [e.dataset.fact, e.textContent]))")


def test_the_nav_opens_every_chapter_in_the_story_order(fresh_page, catalog):
    page, problems = fresh_page
    links = page.locator("#chapter-nav a[data-chapter]")
    chapters = links.evaluate_all("els => els.map(e => e.dataset.chapter)")
    assert chapters == [c.slug for c in CHAPTERS]
    numbers = links.evaluate_all("els => els.map(e => e.querySelector('.site-nav__n').textContent)")
    assert numbers == [str(c.number) for c in CHAPTERS]
    sections = page.locator("main section[data-chapter]").evaluate_all("els => els.map(e => e.dataset.chapter)")
    assert sections == chapters
    for chapter, testids in figures(catalog).items():
        links.filter(has=page.locator(f"xpath=self::*[@data-chapter='{chapter}']")).first.focus()
        page.keyboard.press("Enter")
        chapter_in_url(page, chapter)
        assert in_view(page, chapter)
        assert page.evaluate("document.activeElement.tagName") == "H2", "the keyboard moves to the chapter"
        assert page.locator(f"#chapter-nav a[data-chapter='{chapter}']").get_attribute("aria-current") == "true"
        for testid in testids:
            show(page, testid)
        head = page.locator(f"section[data-chapter='{chapter}'] .chapter__head")
        assert head.locator(".chapter__claim").inner_text().strip()
        assert head.locator("h2").inner_text().endswith("?"), "each chapter asks its question"
    assert problems.errors == []


def top_of(page, chapter: str) -> float:
    """Where the chapter's top is painted on the screen."""
    section = f"document.querySelector(\"section[data-chapter='{chapter}']\")"
    return painted(page, f"{section}.getBoundingClientRect().top")


def test_a_chapter_asked_for_stays_at_the_top_while_the_plots_around_it_draw(fresh_page, catalog):
    """The plots drawn after a jump change the heights above the chapter (the heads chapter's maps grew
    by ~130 px under the prediction chapter's heading, which pushed it down to the line that marks the chapter
    being read); the chapter stays put and marked until the reader scrolls on their own."""
    page, problems = fresh_page
    for chapter in ["heads", "prediction"]:  # as a reader going through the nav
        page.locator(f"#chapter-nav a[data-chapter='{chapter}']").focus()
        page.keyboard.press("Enter")
        chapter_in_url(page, chapter)
    placed = top_of(page, "prediction")
    page.wait_for_function(  # everything within reach of the screen is drawn (a closed fold's is not in reach)
        "() => [...document.querySelectorAll('.plot')].every(el => { const b = el.getBoundingClientRect();"
        " return el.dataset.stale || el.closest('details:not([open])')"
        " || b.bottom < -400 || b.top > innerHeight + 400"
        " || el.querySelector('.main-svg') || el.querySelector('.plot-empty'); })", timeout=UPDATE_TIMEOUT_MS)
    page.wait_for_timeout(500)
    assert abs(top_of(page, "prediction") - placed) <= 2
    assert page.locator("#chapter-nav a[data-chapter='prediction']").get_attribute("aria-current") == "true"
    page.mouse.move(640, 600)
    # the reader scrolls back up into the heads chapter, a few notches of the wheel at a time, as a reader
    # does: a plot that draws as it comes near may stop one notch's smooth scroll short (the page keeps
    # what the reader sees in place), so the next notch carries on
    in_heads = "() => new URLSearchParams(location.search).get('ch') === 'heads'"
    for _ in range(12):
        page.mouse.wheel(0, -300)
        try:
            page.wait_for_function(in_heads, timeout=2_000)
            break
        except PlaywrightTimeout:
            continue
    page.wait_for_function(in_heads, timeout=5_000)
    assert page.locator("#chapter-nav a[data-chapter='heads']").get_attribute("aria-current") == "true"
    assert problems.errors == []


def test_the_composer_compacting_as_it_sticks_moves_nothing_below_it(fresh_page):
    """On a wide screen the text box sticks to the top and sheds its hints. The page under it keeps
    its place: before, it moved up by the height shed, the browser scrolled back by as much, which
    unstuck the box, and near that point the page shook between the two for as long as it was left
    there (a test waiting for a chapter to hold still timed out after 45 s)."""
    page, problems = fresh_page
    below = "() => document.getElementById('training').getBoundingClientRect().top + scrollY"
    at_rest = page.evaluate(below)
    sentinel = page.evaluate("document.getElementById('composer-sentinel').getBoundingClientRect().top")
    for y in range(int(sentinel) - 8, int(sentinel) + 200, 12):  # through the point where it sticks
        page.evaluate("y => window.scrollTo({top: y, behavior: 'instant'})", y)
        seen = page.evaluate("""async () => {
            const seen = [];
            for (let i = 0; i < 10; i++) {
                await new Promise((r) => requestAnimationFrame(r));
                seen.push(scrollY);
            }
            return seen;
        }""")
        assert len(set(seen)) == 1, f"the page moved on its own from {y}: {seen}"
        assert page.evaluate(below) == at_rest
    assert page.locator("#composer.is-stuck").count() == 1
    assert problems.errors == []


def test_a_shared_url_restores_the_chapter_and_its_controls(open_page, catalog):
    first = aligning(catalog)[0]
    page, problems = open_page("?ch=attention&row=1&temp=5&curve=bleu&x=minutes&step=2&show=lstm")
    assert in_view(page, "attention")
    assert page.locator("#scores-temperature-value").inner_text() == "T = 5"
    scores = show(page, f"scores-{first}")
    page.wait_for_function("id => document.querySelector(`[data-testid='${id}']`).dataset.temperature === '5'",
                           arg=f"scores-{first}")
    assert scores.evaluate("el => el.dataset.row") == "1"
    assert page.get_by_test_id("scores-row").input_value() == "1"
    curves = show(page, "curves-plot")
    assert page.get_by_test_id("curve-bleu").is_checked()
    assert page.get_by_test_id("curve-x-minutes").is_checked()
    assert page.get_by_test_id("curve-models").input_value() == "lstm"
    assert curves.evaluate("gd => [gd.dataset.curve, gd.dataset.x]") == ["bleu", "minutes"]
    show(page, "recurrence-plot")
    assert page.get_by_test_id("recurrence-step").input_value() == "2"
    assert problems.errors == []


def test_the_training_chapter_switches_quantity_axis_and_models(fresh_page, catalog, server):
    page, problems = fresh_page
    curves = httpx.get(f"{server}/api/curves").json()
    plot = show(page, "curves-plot")
    kept = [m["name"] for m in catalog if m.get("kept")]
    stars = plot.evaluate("gd => gd.data.filter(t => t.marker?.symbol === 'star').map(t => t.legendgroup)")
    assert stars == [c["model"] for c in curves if c["model"] in kept and c["points"]]
    page.get_by_test_id("curve-bleu").check()
    page.wait_for_function("document.getElementById('curves-plot').dataset.curve === 'bleu'")
    page.get_by_test_id("curve-x-minutes").check()
    page.wait_for_function("document.getElementById('curves-plot').dataset.x === 'minutes'")
    line = next(c for c in curves if c["points"])
    x = plot.evaluate("(gd, m) => gd.data.find(t => t.legendgroup === m && t.mode !== 'markers').x",
                      line["model"])
    assert x == pytest.approx([p["seconds"] / 60 for p in line["points"]])
    page.get_by_test_id("curve-models").select_option(line["model"])
    page.wait_for_function("m => document.getElementById('curves-plot').dataset.show === m", arg=line["model"])
    visible = plot.evaluate("gd => gd.data.map(t => [t.legendgroup, t.visible])")
    assert all((v is True) == (g == line["model"]) for g, v in visible)
    assert "curve=bleu" in page.url and "x=minutes" in page.url and f"show={line['model']}" in page.url
    assert problems.errors == []


def test_the_recurrence_chapter_steps_through_the_sentence_by_keyboard(fresh_page, server):
    page, problems = fresh_page
    answer = httpx.post(f"{server}/api/recurrence", json={"text": SENTENCE}).json()
    plot = show(page, "recurrence-plot")
    assert plot.evaluate("gd => gd.data[0].z") == answer["states"]
    assert page.locator("#recurrence-rule").inner_text().startswith(f"Units shown: {answer['rule']}")
    slider = page.get_by_test_id("recurrence-step")
    slider.focus()
    page.keyboard.press("ArrowRight")
    page.keyboard.press("ArrowRight")
    page.wait_for_function("document.getElementById('recurrence-change').dataset.step === '2'")
    assert plot.evaluate("gd => gd.dataset.step") == "2"
    equation = page.get_by_test_id("recurrence-equation").inner_text()
    assert "h_2 = tanh(W [x_2 ; h_1] + b)" in equation
    change = equation.split("‖h_2 − h_1‖ = ")[1].split()[0]
    assert number(change) == pytest.approx(answer["change"][2], rel=0.06)
    assert "step=2" in page.url
    said = facts(page, "recurrence-story")
    biggest = max(range(len(answer["change"])), key=answer["change"].__getitem__)
    assert number(said["biggest-change"]) == pytest.approx(answer["change"][biggest], rel=0.06)
    assert said["pieces"] == str(len(answer["tokens"]))
    assert problems.errors == []


def test_the_attention_chapter_temperature_from_spotlight_to_fog(fresh_page, catalog, server):
    page, problems = fresh_page
    first = aligning(catalog)[0]
    plot = show(page, f"scores-{first}")
    own = plot.evaluate("gd => [gd.data[1].y, gd.data[2].y]")
    assert own[0] == own[1], "T = 1 reproduces the model's weights"
    slider = page.get_by_test_id("scores-temperature")
    slider.focus()
    page.keyboard.press("End")
    page.wait_for_function("id => document.querySelector(`[data-testid='${id}']`).dataset.temperature === '20'",
                           arg=f"scores-{first}")
    assert "temp=20" in page.url
    body = {"text": SENTENCE, "model": first, "row": 0, "temperature": 20}
    answer = httpx.post(f"{server}/api/scores", json=body).json()
    page.wait_for_function("document.querySelector('#scores-story [data-fact=temperature]').textContent == 20")
    said = facts(page, "scores-story")
    assert number(said["entropy-t"]) == pytest.approx(answer["reweighted_entropy"], rel=0.06)
    change = answer["reweighted_entropy"] - answer["entropy"]
    expected = "more spread" if change > 0 else "sharper" if change < 0 else "the model"
    assert said["direction"].startswith(expected)
    assert plot.evaluate("gd => gd.data[2].y") == answer["reweighted"]
    page.get_by_test_id("scores-row").select_option("1")
    page.wait_for_function("id => document.querySelector(`[data-testid='${id}']`).dataset.row === '1'",
                           arg=f"scores-{first}")
    assert "row=1" in page.url
    assert problems.errors == []


def test_the_numbers_download_as_the_api_answered_them(fresh_page, server):
    page, problems = fresh_page
    show(page, "recurrence-plot")
    button = page.get_by_test_id("numbers-recurrence-plot")
    button.focus()
    with page.expect_download() as download:
        page.keyboard.press("Enter")
    assert download.value.suggested_filename.endswith(".json")
    shown = json.loads(Path(download.value.path()).read_text())
    assert shown == httpx.post(f"{server}/api/recurrence", json={"text": SENTENCE}).json()
    assert problems.errors == []


def measure(page) -> None:
    page.get_by_test_id("timing-measure").click()
    page.wait_for_function("document.getElementById('timing-plot').dataset.state === 'drawn'", timeout=30_000)


def test_the_parallel_chapter_measures_when_asked(open_page, server):
    lengths = ",".join(map(str, TIMING_LENGTHS))
    page, problems = open_page(f"?ch=parallel&tlen={lengths}")
    assert page.get_by_test_id("timing-plot").evaluate("el => el.dataset.state") == "empty", "never on its own"
    measure(page)
    answer = httpx.post(f"{server}/api/timing", json={"lengths": TIMING_LENGTHS}).json()  # kept: the same
    plot = page.get_by_test_id("timing-plot")
    assert plot.evaluate("gd => [gd.layout.xaxis.type, gd.layout.yaxis.type]") == ["log", "log"]
    medians = plot.evaluate("gd => Object.fromEntries(gd.data.map(t => [t.name, t.y]))")
    assert medians == {m: [t["median_ms"] for t in ts] for m, ts in answer["timings"].items()}
    said = facts(page, "timing-story")
    assert (said["device"], said["threads"]) == (answer["device"], str(answer["torch_threads"]))
    assert (said["shortest"], said["longest"]) == ("4", "8")
    ratio = answer["recurrent_over_parallel_longest"]
    assert number(said["lstm-over-transformer"]) == pytest.approx(ratio, rel=0.06)
    assert ("Transformer was the faster" in said["verdict"]) == (ratio > 1)
    assert "×" in page.locator("[data-recap='parallel']").inner_text()
    assert problems.errors == []


def test_the_parallel_chapter_waits_for_someone_elses_measurement(open_page):
    page, problems = open_page("?ch=parallel&tlen=4,8")
    refused = []

    def busy_once(route):
        if not refused:
            refused.append(route.request.url)
            route.fulfill(status=429, headers={"Retry-After": "1"}, content_type="application/json",
                          json={"detail": "a timing measurement is running"})
        else:
            route.continue_()

    page.route("**/api/timing", busy_once)
    measure(page)
    assert refused, "the page was told to wait, and asked again"
    problems.errors[:] = [e for e in problems.errors if "429" not in e]  # the refused request's own log line
    assert problems.errors == []


def test_the_recap_links_every_chapter_with_its_headline(open_page, server):
    page, problems = open_page("?ch=point")
    assert in_view(page, "point")
    links = page.locator("#recap a[data-chapter]").evaluate_all("els => els.map(e => e.dataset.chapter)")
    assert links == [c.slug for c in CHAPTERS if c.recap]
    # complete on first load, no chapter opened: the rows measured on the sentence are the API's own
    rows = page.locator(".recap__fact").evaluate_all(
        "els => Object.fromEntries(els.map(e => [e.dataset.recap, e.textContent]))")
    assert all(rows.values()), rows
    answer = httpx.post(f"{server}/api/recap", json={"text": SENTENCE}).json()
    assert {r["chapter"] for r in answer["rows"]} <= {c.slug for c in CHAPTERS if c.recap}
    for row in answer["rows"]:  # the attention chapter's one line in a place of its own, named by its part
        assert rows[f"{row['chapter']}-{row['part']}" if row["part"] else row["chapter"]] == row["text"]
    assert "first encoder layer" in rows["attention-lookup"]
    assert "BLEU" in page.locator("[data-recap='bottleneck']").inner_text()
    assert "heads" in page.locator("[data-recap='heads']").inner_text()
    page.locator("#recap a[data-chapter='recurrence']").click()
    chapter_in_url(page, "recurrence")
    show(page, "recurrence-plot")
    answer = httpx.post(f"{server}/api/recurrence", json={"text": SENTENCE}).json()
    token = answer["tokens"][max(range(len(answer["change"])), key=answer["change"].__getitem__)]
    assert token.lstrip("▁") in page.locator("[data-recap='recurrence']").inner_text()
    assert problems.errors == []
