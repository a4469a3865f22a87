"""A reader's first minute: nothing shifts, nothing is blank without saying why, and no sentence is
ever shown with a hole where a number will go.

The page is opened fresh and read from top to bottom at a reader's pace while a check runs on every
frame that changed: a sentence (a paragraph, list item or note holding data-fact slots) that is
visible on the screen must have every slot filled. Figures keep the size they had at first paint, and the load
shifts nothing on the first screen."""

from __future__ import annotations

import pytest

from tests.browser.conftest import show_everything

pytestmark = pytest.mark.browser
STEP_OF_SCREEN = 0.85  # each scroll moves this much of the screen's height: every line is seen
PAUSE_MS = 300  # between two scrolls: a quick reader's skim, while the answers arrive
# the second pass, every answer in: the check has run on a few frames at each place
FRAMES = ("() => new Promise(done => requestAnimationFrame(() => requestAnimationFrame("
          "() => requestAnimationFrame(done))))")

# Installed once the document is parsed (before the page's modules have asked the server anything):
# at every frame in which something could have changed what is on the screen (the document changed,
# the page scrolled or was resized), each visible slot that is still empty, and each visible sentence
# that reads "undefined" or "NaN", is recorded with the words around it. A frame in which nothing of
# that happened shows what the one before it showed, so it is not checked again (checking every frame
# kept the renderer busy for the whole read, on a machine whose two cores the suite's workers share).
WATCH = """() => {
  window.holes = [];
  const seen = new Set();
  const onScreen = (el) => {
    const box = el.getBoundingClientRect();
    return box.bottom > 0 && box.top < innerHeight && box.width > 0 && box.height > 0;
  };
  const shown = (el) => el.checkVisibility({ visibilityProperty: true, opacityProperty: true }) && onScreen(el);
  const check = () => {
    for (const slot of document.querySelectorAll("[data-fact]")) {
      const sentence = slot.closest("p, li, .panel__note") || slot.parentElement;
      const visible = slot.checkVisibility({ visibilityProperty: true, opacityProperty: true });
      if (slot.textContent.trim() === "" && visible && shown(sentence)) {
        const what = `${slot.dataset.fact}: ${sentence.textContent.trim().slice(0, 90)}`;
        if (!seen.has(what)) { seen.add(what); window.holes.push(what); }
      }
    }
    for (const sentence of document.querySelectorAll("main p, main li")) {
      if (/\\b(undefined|NaN)\\b/.test(sentence.textContent) && shown(sentence)) {
        const what = `garbled: ${sentence.textContent.trim().slice(0, 90)}`;
        if (!seen.has(what)) { seen.add(what); window.holes.push(what); }
      }
    }
  };
  let asked = 0;
  const changed = () => { asked ||= requestAnimationFrame(() => { asked = 0; check(); }); };
  new MutationObserver(changed).observe(document.documentElement,
    { subtree: true, childList: true, characterData: true, attributes: true });
  addEventListener("scroll", changed, { passive: true });
  addEventListener("resize", changed);
  check();
}"""

SHIFTS = """() => {
  window.shifted = [];
  new PerformanceObserver((list) => {
    for (const e of list.getEntries()) if (!e.hadRecentInput) window.shifted.push(e.value);
  }).observe({ type: "layout-shift", buffered: true });
}"""

# each figure's height, and its panel's (the plot, its caption and its download button's room)
PLOT_HEIGHTS = ("() => Object.fromEntries([...document.querySelectorAll('.plot[id]')]"
                ".filter(p => p.offsetParent)"
                ".map(p => [p.id, [p.offsetHeight, p.closest('figure').offsetHeight]]))")


def open_fresh(page, server: str, width: int = 1280, height: int = 900) -> None:
    """The session's page, loaded anew at `/` with the watchers installed before any answer arrives."""
    page.unroute_all(behavior="ignoreErrors")
    page.set_viewport_size({"width": width, "height": height})
    page.goto(f"{server}/", wait_until="domcontentloaded")
    page.evaluate(WATCH)
    page.evaluate(SHIFTS)


def read_down(page, pause_ms: int | None = PAUSE_MS) -> None:
    """Scroll from the top to the bottom in steps, pausing on each like a reader skimming (None: for
    three frames, each of which the check runs on)."""

    def stay() -> None:
        page.wait_for_timeout(pause_ms) if pause_ms is not None else page.evaluate(FRAMES)

    page.evaluate("scrollTo(0, 0)")
    stay()
    height = page.evaluate("document.documentElement.scrollHeight")
    screen = page.evaluate("innerHeight")
    y = 0
    while y < height:
        y += int(screen * STEP_OF_SCREEN)
        page.mouse.wheel(0, int(screen * STEP_OF_SCREEN))
        stay()
        height = page.evaluate("document.documentElement.scrollHeight")


@pytest.mark.parametrize("width", [1280, 412])
def test_no_sentence_is_ever_shown_with_a_hole(browser_page, server, width):
    page, problems = browser_page
    problems.clear()
    open_fresh(page, server, width=width, height=900 if width > 800 else 820)
    read_down(page)
    page.wait_for_function("() => window.attentionLab && window.attentionLab.lastUpdate !== null")
    read_down(page, None)  # and once more with every answer in
    assert page.evaluate("window.holes") == []
    assert problems.errors == []


def test_figures_keep_their_first_size_and_the_first_screen_does_not_shift(browser_page, server):
    page, problems = browser_page
    problems.clear()
    open_fresh(page, server)
    first = page.evaluate(PLOT_HEIGHTS)
    assert first and all(h > 0 for h, _ in first.values()), first
    # until drawn, a figure says so: its placeholder line is there from the first paint
    waiting = page.locator(".plot:empty").first
    label = waiting.evaluate("el => getComputedStyle(el, '::before').content")
    assert label not in ("none", "normal", '""'), label
    page.wait_for_function("() => window.attentionLab && window.attentionLab.lastUpdate !== null")
    page.wait_for_timeout(500)
    assert sum(page.evaluate("window.shifted")) < 0.02
    show_everything(page)
    after = page.evaluate(PLOT_HEIGHTS)
    assert {k: after[k] for k in first} == first
    assert problems.errors == []
