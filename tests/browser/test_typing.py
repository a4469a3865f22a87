"""The typing loop, as a reader lives it: typing mid-page moves nothing, an answered chapter stays
answered through new sentences, the first screen answers every key with the API's own translation,
and a key asks only for the models of the views on or near the screen."""

from __future__ import annotations

import json

import httpx
import pytest

from tests.browser.conftest import UPDATE_TIMEOUT_MS, Problems, painted

pytestmark = pytest.mark.browser

WIDE, NARROW = (1400, 1000), (390, 844)
TYPED = " Il pleut."
HELD_PX = 2


@pytest.fixture(scope="module")
def reader(chromium):
    """A page of its own, whose requests are recorded; its reader's choice is set per test."""
    context = chromium.new_context(viewport={"width": WIDE[0], "height": WIDE[1]}, bypass_csp=True)
    page = context.new_page()
    page.set_default_timeout(UPDATE_TIMEOUT_MS)
    requests: list[tuple[str, str]] = []
    page.on("request", lambda r: requests.append((r.url, r.post_data or "")))
    yield page, Problems(page), requests
    context.close()


def load(page, server: str, query: str, size: tuple[int, int], asking: bool) -> None:
    page.set_viewport_size({"width": size[0], "height": size[1]})
    if not page.url.startswith(server):
        page.goto(f"{server}/static/css/app.css")
    page.evaluate("value => localStorage.setItem('attentionLab.questions', value)", "ask" if asking else "show")
    page.goto(f"{server}/{query}")
    page.wait_for_function("window.attentionLab && window.attentionLab.lastUpdate !== null")


def heading(chapter: str) -> str:
    return f"document.querySelector('section[data-chapter=\"{chapter}\"] h2').getBoundingClientRect().top"


# resolves once the page has stayed put for three frames: a wheel's scroll is animated, and the
# keeper may put the page back after a change of size
STILL = """() => new Promise((done) => {
  let last = scrollY, still = 0;
  const frame = () => {
    still = scrollY === last ? still + 1 : 0;
    last = scrollY;
    if (still >= 3) done(); else requestAnimationFrame(frame);
  };
  requestAnimationFrame(frame);
})"""


def wheel_to(page, chapter: str, flick: int = 500) -> None:
    """Scroll with the mouse wheel, as a reader does, until the chapter's heading is near the top:
    `flick` px a turn at most, turn after turn (each scroll still running); then, once the page is
    still, short turns until the heading is where it was meant to be: a turn measured mid-scroll
    can carry it past, most on a busy machine."""
    size = page.viewport_size
    page.mouse.move(size["width"] / 2, size["height"] / 2)
    for _ in range(300):
        top = page.evaluate(heading(chapter))
        if 150 <= top <= 400:
            break
        page.mouse.wheel(0, max(-flick, min(flick, top - 250)))
        page.wait_for_timeout(30)
    for _ in range(20):
        page.evaluate(STILL)
        top = page.evaluate(heading(chapter))
        if 150 <= top <= 400:
            break
        page.mouse.wheel(0, top - 250)
    else:
        raise AssertionError(f"the wheel never brought {chapter!r}'s heading near the top (at {top} px)")
    page.wait_for_timeout(300)


def type_keys(page, keys: str, check=None) -> None:
    """Into the stuck text box, at its end, one key at a time; `check()` after each key; then wait
    until every view shows the new text."""
    page.get_by_test_id("source").click()
    page.keyboard.press("End")
    for key in keys:
        page.keyboard.type(key)
        page.wait_for_timeout(60)
        if check:
            check()
    text = page.get_by_test_id("source").input_value()
    page.wait_for_function("text => window.attentionLab.lastUpdate?.text === text", arg=text)
    page.wait_for_timeout(300)


def translate(server: str, text: str, model: str) -> dict:
    """POST /api/translate's answer: what the page's views must show for `text`."""
    return httpx.post(f"{server}/api/translate", json={"text": text.strip(), "model": model}, timeout=60).json()


def compares(requests: list[tuple[str, str]]) -> list[list[str]]:
    return [json.loads(body)["models"] for url, body in requests if url.endswith("/api/compare")]


# the training chapter holds the teaching panel, whose French line follows the typing
MID_PAGE = ("training", "gradients", "attention", "order", "heads", "room", "prediction")


# what the reader sees of the figures: those on the screen (not in a closed fold, whose content keeps
# its box) that show a chart or say something, by name; those drawn for an older text (stale); and
# how many folds are open
SEEN = """() => {
  const onScreen = (el) => { const b = el.getBoundingClientRect();
    return el.getClientRects().length && !el.closest('details:not([open])')
      && b.bottom > 0 && b.top < innerHeight; };
  const plots = [...document.querySelectorAll('.plot')]
    .filter((el) => (el.id || el.dataset.testid) && onScreen(el));
  const showing = (el) => !!(el.querySelector('.main-svg') || el.querySelector('.plot-empty'));
  return { showing: plots.filter(showing).map((el) => el.id || el.dataset.testid),
           stale: plots.filter((el) => el.dataset.stale).map((el) => el.id || el.dataset.testid),
           open: document.querySelectorAll('main details[open]').length };
}"""


def typed_at(page, chapter: str) -> list[float]:
    """Type TYPED with the chapter's heading near the top: how far the heading moved at each key and
    once every view is drawn. Nothing on the screen goes blank or closes at any key, and once the
    views show the new text, no figure on the screen is left drawn for an older one."""
    top = painted(page, heading(chapter))
    before = page.evaluate(SEEN)
    seen = []

    def check():
        seen.append(painted(page, heading(chapter)))
        now = page.evaluate(SEEN)
        blank = sorted(set(before["showing"]) - set(now["showing"]))
        assert not blank and now["open"] >= before["open"], (chapter, "went blank or closed", blank, now)

    type_keys(page, TYPED, check)
    seen.append(painted(page, heading(chapter)))
    page.wait_for_function(f"() => ({SEEN})().stale.length === 0", polling=100)
    after = page.evaluate(SEEN)
    assert set(before["showing"]) <= set(after["showing"]), (chapter, before, after)
    return [round(y - top, 2) for y in seen]


# a wide screen's reader flicks the wheel past the chapters between two stops, which are then drawn
# only while they type below them; a phone's turns it slowly, each chapter drawn on the way
WALKS = {"wide": (WIDE, 2000), "narrow": (NARROW, 500)}


@pytest.mark.parametrize("walk", WALKS)
def test_typing_mid_page_moves_nothing(reader, server, walk):
    """The reader goes down the page by the mouse wheel and types a sentence at each chapter in turn:
    that chapter's heading keeps its place within 2 px at every key and once every view is drawn
    (before: the page scrolled up by 81 px at every key, the stuck box's caret revealed below the
    page's scroll-padding); nothing on the screen goes blank or closes, and the answer comes to
    every figure in view."""
    page, problems, _ = reader
    size, flick = WALKS[walk]
    load(page, server, "", size, asking=False)
    problems.clear()
    moved = {}
    for chapter in MID_PAGE:
        wheel_to(page, chapter, flick)
        moved[chapter] = typed_at(page, chapter)
    most = {chapter: max(map(abs, seen)) for chapter, seen in moved.items()}
    assert all(px <= HELD_PX for px in most.values()), most
    assert not problems.errors


def test_an_answered_chapter_stays_answered_through_new_sentences(reader, server):
    page, problems, _ = reader
    load(page, server, "?ch=recurrence", WIDE, asking=True)
    problems.clear()
    card, reveal = page.locator("[data-question='recurrence']"), page.locator("[data-reveal='recurrence']")
    page.wait_for_selector("[data-question='recurrence'] button[data-choice]")
    assert reveal.evaluate("el => el.hidden")
    recap_row = "n => !document.querySelector(`[data-recap='${n}']`).hidden"
    assert not page.evaluate(recap_row, "recurrence"), "the recap shows an answer not yet given"
    top = painted(page, heading("recurrence"))
    card.locator("button[data-choice]").first.click()
    assert not reveal.evaluate("el => el.hidden")
    assert page.evaluate(recap_row, "recurrence") and not page.evaluate(recap_row, "gradients")
    height = page.evaluate("document.body.scrollHeight")
    for words in (" Il pleut.", " Nous restons ici.", " Le chat dort."):
        type_keys(page, words)
        assert not reveal.evaluate("el => el.hidden"), f"the recurrence chapter hidden again after {words!r}"
        assert card.locator(".question__result[data-verdict]").is_visible()
        assert card.get_by_test_id("question-recurrence-again").is_visible()
        assert abs(painted(page, heading("recurrence")) - top) <= HELD_PX
        assert page.evaluate("document.body.scrollHeight") >= height * 0.9, "the page collapsed"
    # asked again, it is the question of the sentence in the box, and the chapter waits for the answer
    card.get_by_test_id("question-recurrence-again").click()
    page.wait_for_selector("[data-question='recurrence'] button[data-choice]:not([disabled])")
    assert reveal.evaluate("el => el.hidden")
    assert card.locator(".question__result").is_hidden()
    assert not page.evaluate(recap_row, "recurrence")
    assert not problems.errors


@pytest.mark.parametrize("size", [WIDE, NARROW], ids=["wide", "narrow"])
def test_the_first_screen_answers_every_key(reader, server, catalog, size):
    page, problems, _ = reader
    load(page, server, "", size, asking=True)
    problems.clear()
    shown = page.get_by_test_id("glance-translation")
    assert page.get_by_test_id("glance-model").input_value() == "transformer"
    type_keys(page, " Il pleut.")
    text = page.get_by_test_id("source").input_value()
    page.wait_for_timeout(200)
    api = translate(server, text, "transformer")
    assert shown.inner_text() == api["translation"]
    box = shown.bounding_box()
    assert box and box["y"] >= 0 and box["y"] + box["height"] <= size[1], "the translation is out of view"
    looks = page.get_by_test_id("glance-looks").locator("li")
    assert looks.count() == len(api["target_tokens"])
    said = page.locator("#glance-said").text_content()
    assert api["translation"] in said  # its sentence twin says what it shows
    # another model, the reader's choice, kept in the URL
    other = next(m["name"] for m in catalog if m["name"] != "transformer" and not m["cross_attention"])
    page.get_by_test_id("glance-model").select_option(other)
    answer = translate(server, text, other)
    page.wait_for_function("t => document.getElementById('glance-translation').textContent === t",
                           arg=answer["translation"])
    assert f"glance={other}" in page.url
    assert looks.count() == 0  # no attention: no word looked anywhere, and it says so
    assert other in page.locator("#glance-how").text_content()
    page.get_by_test_id("glance-model").select_option("transformer")
    assert not problems.errors


@pytest.mark.parametrize(("chapter", "everyone"), [("top", False), ("gradients", False), ("bottleneck", True),
                                                   ("scaling", False)])
def test_a_key_asks_only_for_the_models_on_screen(reader, server, catalog, chapter, everyone):
    page, problems, requests = reader
    load(page, server, "", WIDE, asking=False)
    problems.clear()
    if chapter != "top":
        wheel_to(page, chapter)
    before = len(requests)
    type_keys(page, TYPED)
    asked = compares(requests[before:])
    assert len(asked) >= len(TYPED) - 1, asked  # each key asks at once (the last keys may be one round)
    wanted = {m["name"] for m in catalog} if everyone else {"transformer"}
    assert all(set(models) == wanted for models in asked), asked
    assert not problems.errors


def test_a_chapter_that_comes_near_later_asks_once_for_its_models(reader, server, catalog):
    """Typed at the top, the bottleneck chapter's cards were not asked about; scrolled to, they ask in one
    request."""
    page, problems, requests = reader
    load(page, server, "", WIDE, asking=False)
    problems.clear()
    type_keys(page, TYPED)
    before = len(requests)
    page.locator("#bottleneck").scroll_into_view_if_needed()
    text = page.get_by_test_id("source").input_value()
    names = [m["name"] for m in catalog]
    for name in names:
        card = f"[data-testid='translation-{name}']"
        page.wait_for_function("sel => !document.querySelector(sel).classList.contains('is-pending')", arg=card)
    asked = compares(requests[before:])
    # one request, for the cards' models but the first screen's, which the page has kept
    assert len(asked) == 1 and set(asked[0]) == set(names) - {"transformer"}, asked
    answer = translate(server, text, names[0])
    shown = page.get_by_test_id(f"translation-{names[0]}").inner_text()
    assert shown == (answer["translation"] or "(empty translation)")
    assert not problems.errors


def test_a_round_overtaken_by_an_empty_text_leaves_nothing_dimmed(reader, server):
    """An ask aborted while its answer is on the way (here: the text emptied before the compare
    answers) undims its panels: before, it returned before clearing `is-busy`."""
    page, problems, _ = reader
    load(page, server, "", WIDE, asking=False)
    problems.clear()
    held = []
    page.route("**/api/compare", lambda route: held.append(route))
    box = page.get_by_test_id("source")
    box.click()
    page.keyboard.press("End")
    page.keyboard.type(" x")
    page.wait_for_function("() => document.querySelector('#glance-translation.is-busy') !== null")
    box.fill("")
    page.wait_for_function("() => window.attentionLab.lastUpdate?.text === ''")
    assert held, "the compare was not held"
    assert page.locator(".is-busy").count() == 0
    page.unroute("**/api/compare")  # the held requests go on (their answers are for no one)
    problems.clear()  # the held requests' aborts are logged as failed loads
