"""The reader's settings for colour and motion: a high-contrast switch in the header (a toggle button,
remembered in the browser, on by itself when the system asks for more contrast) that redraws every
figure with the high-contrast scales from what it drew, asking nothing again; and, with less motion
asked for, nothing on the page moves by itself: no transition, animation or smooth scroll, and no
Plotly transition."""

from __future__ import annotations

import pytest

from tests.browser.conftest import asked_of_the_page, sent_so_far, show, show_everything
from tests.browser.test_figures_unseen import AUDIT, AXE, WCAG

pytestmark = pytest.mark.browser

VIRIDIS_START, INFERNO_START = "#440154", "#000004"  # the first stops of plots.js's two weight scales
FIRST_STOP = "el => el.data.find(t => t.type === 'heatmap').colorscale[0][1]"
# every line and marker colour drawn, with its contrast against the white page
LINE_CONTRASTS = """els => els.flatMap(el => el.data.flatMap(t => [t.line?.color, t.marker?.color]))
  .filter(c => typeof c === 'string' && /^#[0-9a-f]{6}$/i.test(c)).map(c => {
    const lin = [1, 3, 5].map(i => parseInt(c.slice(i, i + 2), 16) / 255)
      .map(v => v <= 0.04045 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4);
    return [c, 1.05 / (0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2] + 0.05)];
  })"""


def first_aligning(catalog) -> str:
    return next(m["name"] for m in catalog if m["recurrent"] and m["cross_attention"])


def test_high_contrast_switch_redraws_from_what_was_drawn(open_page, catalog):
    page, problems = open_page("?ch=attention")
    page.evaluate("localStorage.removeItem('attentionLab.contrast')")
    try:
        plot = show(page, f"attention-{first_aligning(catalog)}")
        switch = page.get_by_test_id("contrast-switch")
        assert switch.get_attribute("aria-pressed") == "false"
        assert plot.evaluate(FIRST_STOP) == VIRIDIS_START
        page.wait_for_load_state("networkidle")
        asked: list[str] = []
        page.on("request", lambda r: "/api/" in r.url and asked.append(r.url))

        switch.focus()
        page.keyboard.press("Enter")  # a button: the keyboard works it
        page.wait_for_function(f"() => ({FIRST_STOP})(document.querySelector('.plot[data-testid^=attention-]'))"
                               f" === '{INFERNO_START}'")
        assert switch.get_attribute("aria-pressed") == "true"
        ink = page.evaluate("getComputedStyle(document.documentElement).getPropertyValue('--ink').trim()")
        assert ink == "#000000"
        assert page.locator(".plot[data-state='drawn']").evaluate_all(
            f"els => els.flatMap(el => el.data.filter(t => t.type === 'heatmap' && t.colorscale)"
            f".map(t => t.colorscale[0][1])).filter(c => c === '{VIRIDIS_START}')") == []
        sent_so_far(page)  # the redraw is done: whatever it asked has been reported by now
        assert asked_of_the_page(asked) == [], "switching the contrast redraws from the answers drawn, " \
                                               "asking nothing"

        show_everything(page)  # every figure drawn at high contrast: its lines dark enough, axe content
        drawn = page.locator(".plot[data-state='drawn']").evaluate_all(LINE_CONTRASTS)
        weak = [(c, round(r, 2)) for c, r in drawn if r < 4.5]
        assert weak == []
        page.add_script_tag(path=str(AXE))
        audit = page.evaluate(AUDIT, WCAG)
        assert audit["passed"] > 10 and audit["violations"] == [], audit

        page.reload()  # remembered
        page.wait_for_function("window.attentionLab && window.attentionLab.lastUpdate !== null")
        assert page.get_by_test_id("contrast-switch").get_attribute("aria-pressed") == "true"
        assert show(page, f"attention-{first_aligning(catalog)}").evaluate(FIRST_STOP) == INFERNO_START
        page.get_by_test_id("contrast-switch").click()
        page.wait_for_function("() => !document.documentElement.dataset.contrast")
        assert plot.evaluate(FIRST_STOP) == VIRIDIS_START
        assert problems.errors == []
    finally:
        page.evaluate("localStorage.removeItem('attentionLab.contrast')")


def test_high_contrast_follows_the_system_until_the_reader_chooses(open_page):
    page, problems = open_page()
    page.evaluate("localStorage.removeItem('attentionLab.contrast')")
    try:
        page.emulate_media(contrast="more")
        page.reload()
        switch = page.get_by_test_id("contrast-switch")
        page.wait_for_function("() => document.documentElement.dataset.contrast === 'more'")
        assert switch.get_attribute("aria-pressed") == "true"
        switch.click()  # the reader's choice wins over the system's
        page.reload()
        page.wait_for_selector("[data-testid=contrast-switch][aria-pressed=false]")
        assert page.evaluate("document.documentElement.dataset.contrast") is None
        assert problems.errors == []
    finally:
        page.emulate_media(contrast="null")
        page.evaluate("localStorage.removeItem('attentionLab.contrast')")


STILL = """() => {
  const moving = [];
  for (const el of document.querySelectorAll('*')) {
    for (const pseudo of [null, '::before', '::after']) {
      const style = getComputedStyle(el, pseudo);
      const seconds = (list) => list.split(',').map(parseFloat).reduce((a, b) => a + b, 0);
      const moves = seconds(style.transitionDuration) + seconds(style.transitionDelay) > 0;
      if (moves || style.animationName !== 'none')
        moving.push(`${el.tagName.toLowerCase()}.${el.className.baseVal ?? el.className}${pseudo || ''}`);
    }
  }
  return {moving: [...new Set(moving)].slice(0, 10),
    scroll: getComputedStyle(document.documentElement).scrollBehavior,
    plotly: [...document.querySelectorAll('.js-plotly-plot')].filter(el => el.layout && el.layout.transition
      && el.layout.transition.duration > 0).map(el => el.dataset.testid)};
}"""


def test_reduced_motion_stills_the_page_and_play_steps(open_page, catalog):
    page, problems = open_page()
    try:
        assert page.evaluate(STILL)["moving"], "without the setting the page has transitions to stop"
        page.emulate_media(reduced_motion="reduce")
        model = next(m for m in catalog if "encoder" in m["attention_kinds"] and len(m["snapshots"]) > 1)
        name, timeline = model["name"], model["snapshots"]
        page.goto(page.url.split("?")[0] + "?hstep=0")
        page.wait_for_function("window.attentionLab && window.attentionLab.lastUpdate !== null")
        show(page, f"scrub-map-{name}")
        page.get_by_test_id(f"scrub-play-{name}").hover()  # a hovered modebar and button would fade in
        assert page.evaluate(STILL) == {"moving": [], "scroll": "auto", "plotly": []}

        steps: list[str] = []  # Play walks the snapshots one drawing each, in order
        page.expose_function("seen", lambda step: steps.append(step))
        page.get_by_test_id(f"scrub-map-{name}").evaluate(
            "el => el.addEventListener('plot:drawn', () => window.seen(el.dataset.step))")
        page.get_by_test_id(f"scrub-play-{name}").click()
        page.wait_for_function(
            "id => document.querySelector(`[data-testid='${id}']`).textContent.includes('Play')",
            arg=f"scrub-play-{name}")
        assert [int(s) for s in dict.fromkeys(steps)] == [p["step"] for p in timeline[1:]]
        assert page.evaluate(STILL) == {"moving": [], "scroll": "auto", "plotly": []}
        assert problems.errors == []
    finally:
        page.emulate_media(reduced_motion="null")
