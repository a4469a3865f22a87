"""A link to a chapter lands on it: `?ch=<slug>`, or the number a link made before the slugs gave the
chapter, opens the page with that chapter's heading at the top, just under the text box, in "Ask me
first" (every new visitor's mode, where the questions hide what each chapter measures and the page
gets shorter under the chapter asked for) and in "Just show me", on a wide and a narrow screen, in
both languages. One page goes through every link of a mode and a size."""

from __future__ import annotations

import pytest

from app.chapters import BEFORE_SLUGS, CHAPTERS
from tests.browser.conftest import UPDATE_TIMEOUT_MS, painted

pytestmark = pytest.mark.browser

# width, height, the page's language: each size is read in one language, so both are read
SIZES = {"wide": (1400, 1000, "en"), "narrow": (390, 844, "fr")}
MODES = ("ask", "show")  # static/js/questions.js: "Ask me first", "Just show me"
PLACED_PX = 2

# every plot the reader sees drawn (on the screen, below the text box, not in a closed fold): the
# first update's figures have changed the heights they change
DRAWN = ("() => { const line = document.getElementById('composer').getBoundingClientRect().bottom;"
         " return [...document.querySelectorAll('.plot')].every(el => { const b = el.getBoundingClientRect();"
         " return !el.getClientRects().length || el.closest('details:not([open])')"
         " || b.bottom <= line || b.top > innerHeight"
         " || el.querySelector('.main-svg') || el.querySelector('.plot-empty'); }); }")



def where(page, chapter: str) -> dict:
    """Where `chapter`'s section is painted: its top, the top a jump gives it (its scroll margin, just
    below the text box), its heading's top and the text box's bottom."""
    return painted(page, f"""(() => {{
      const section = document.querySelector('section[data-chapter="{chapter}"]');
      return {{top: section.getBoundingClientRect().top,
               margin: parseFloat(getComputedStyle(section).scrollMarginTop),
               heading: section.querySelector('h2').getBoundingClientRect().top,
               box: document.getElementById('composer').getBoundingClientRect().bottom}};
    }})()""")


def landed(seen: dict) -> bool:
    """Its top where a jump puts it, and its heading below the text box."""
    return abs(seen["top"] - seen["margin"]) <= PLACED_PX and seen["heading"] >= seen["box"]


def links(variant: int) -> list[tuple[str, str]]:
    """(what `?ch=` says, the chapter it opens): every chapter by its slug, and one link by the
    number a link made before the slugs gave it, another number in each of the four variants. A
    number is answered with a redirect to its slug's address (every number's is checked over HTTP
    in tests/app/test_chapters.py), so a page loaded by number is the slug's page; one a variant
    shows the browser follows it."""
    number = 1 + (variant * 3) % len(BEFORE_SLUGS)
    return [(c.slug, c.slug) for c in CHAPTERS] + [(str(number), BEFORE_SLUGS[number - 1])]


@pytest.fixture(scope="module")
def reader(chromium, server):
    """One page for every link, in a browser of its own (the mode is stored in it)."""
    context = chromium.new_context(bypass_csp=True)
    page = context.new_page()
    page.set_default_timeout(UPDATE_TIMEOUT_MS)
    yield context, page
    context.close()


def choose(context, page, server: str, mode: str) -> None:
    """The reader's choice of mode, as the page keeps it: in the browser and in the cookie the server reads."""
    page.goto(f"{server}/api/health")
    page.evaluate("mode => localStorage.setItem('attentionLab.questions', mode)", mode)
    context.add_cookies([{"name": "questions", "value": mode, "url": server}])


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("mode", MODES)
def test_every_chapter_link_lands_on_its_chapter(reader, server, mode, size):
    context, page = reader
    width, height, lang = SIZES[size]
    choose(context, page, server, mode)
    page.set_viewport_size({"width": width, "height": height})
    missed = []
    for link, chapter in links(MODES.index(mode) * len(SIZES) + list(SIZES).index(size)):
        page.goto(f"{server}/?lang={lang}&ch={link}")
        page.wait_for_function("window.attentionLab && window.attentionLab.lastUpdate !== null")
        page.wait_for_function(DRAWN)
        seen = where(page, chapter)
        asked = page.evaluate("new URLSearchParams(location.search).get('ch')")
        if asked != chapter or not landed(seen):
            missed.append((link, asked, seen))
    said = f"links that did not land in {mode} mode at {size} (link, ch after, where):"
    assert not missed, "\n".join([said, *map(str, missed)])
