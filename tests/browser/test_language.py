"""The page in French and in English: every chapter in one language, numbers by its rules, and a
switch that keeps the reader's sentence, chapter and controls and asks the models nothing."""

from __future__ import annotations

import json
import re

import pytest

from app.config import REPO_ROOT
from tests.browser.conftest import asked_of_the_page, sent_so_far, show_everything

pytestmark = pytest.mark.browser

CATALOGUES = REPO_ROOT / "static" / "i18n"
PLACEHOLDER = re.compile(r"\{\w+\}|%\{[^}]*\}|<[^>]+>")
DECIMAL = re.compile(r"^[−-]?\d+[.,]\d+$")


@pytest.fixture(autouse=True)
def forget_the_language(browser_page):
    """The switch remembers French in a cookie: the pages of the tests after these open in English."""
    yield
    browser_page[0].context.clear_cookies()


def switch_to_french(page) -> list[str]:
    """Press the page's "Français" and wait for every view to redraw; the API requests made meanwhile."""
    asked = []
    listen = lambda request: "/api/" in request.url and asked.append(request.url)  # noqa: E731
    page.on("request", listen)
    try:
        page.get_by_test_id("lang-fr").click()
        page.wait_for_selector("html[data-switched=fr]", state="attached")
        sent_so_far(page)  # every view has redrawn: whatever they asked has been reported by now
    finally:
        page.remove_listener("request", listen)
    return asked_of_the_page(asked)


def messages(lang: str) -> list[str]:
    catalogue = json.loads((CATALOGUES / f"{lang}.json").read_text(encoding="utf-8"))
    forms = (message.values() if isinstance(message, dict) else [message] for message in catalogue.values())
    return [form for some in forms for form in some]


def phrases(lang: str, other: str) -> set[str]:
    """The runs of three words or more between the placeholders of `lang`'s messages that `other`'s
    messages do not also write (a formula, a model's name, a command)."""
    theirs = " ".join(messages(other))
    runs = (run.strip(" .,:;()“”«»") for message in messages(lang) for run in PLACEHOLDER.split(message))
    return {run for run in runs if len(run.split()) >= 3 and run not in theirs}


def read(page, lang: str) -> str:
    """Every view drawn for the sentence, then the page's text (figure sentences included), less
    what is marked as written in another language (lang="..."): the sentence typed, the models'
    translations, the server's own words for a model the story does not name."""
    show_everything(page)
    text = page.evaluate("document.body.innerText")
    for other in page.locator(f"body [lang]:not([lang={lang}])").all_inner_texts():
        text = text.replace(other, "")
    return text


@pytest.mark.parametrize(("lang", "other"), [("fr", "en"), ("en", "fr")])
def test_every_chapter_in_one_language(open_page, lang, other):
    page, problems = open_page(f"?lang={lang}")
    assert page.evaluate("document.documentElement.lang") == lang
    text = read(page, lang)
    found = sorted(phrase for phrase in phrases(other, lang) if phrase in text)
    assert not found, f"{other} words on the {lang} page: {found[:10]}"
    facts = [fact.strip() for fact in page.locator("[data-fact]").all_inner_texts()]
    decimals = [fact for fact in facts if DECIMAL.match(fact)]
    assert len(decimals) >= 10, facts  # the stories' measured numbers
    point = "," if lang == "fr" else "."
    assert all(point in fact for fact in decimals), decimals
    if lang == "fr":  # a percentage and a power of ten, as French writes them
        assert re.search(r"\d\u202f%", text) or re.search(r"\d %", text)
        assert not re.search(r"\d×10", text)
    assert not problems.errors


CONTROLS = """() => [...document.querySelectorAll('main input, main select, #source')]
    .map((c) => `${c.id || c.name}=${c.type === 'radio' || c.type === 'checkbox' ? c.checked : c.value}`)"""


def test_switching_keeps_everything_and_asks_nothing(open_page):
    page, problems = open_page("?lang=en&beam=3&temp=2&len=20&ch=9&kind=encoder&sel=0,1")
    read(page, "en")
    page.get_by_test_id("heads-grid").scroll_into_view_if_needed()
    page.wait_for_function("new URLSearchParams(location.search).get('ch') === '9'")  # the chapter in view
    page.wait_for_timeout(300)
    before = {"controls": page.evaluate(CONTROLS), "query": page.evaluate("location.search")}
    asked = switch_to_french(page)
    assert page.evaluate("document.documentElement.lang") == "fr"
    assert page.evaluate(CONTROLS) == before["controls"]
    assert page.evaluate("location.search") == before["query"].replace("lang=en", "lang=fr")
    assert "Pourquoi ne poser qu’une question à la fois" in page.get_by_test_id("heads-story").evaluate(
        "el => el.closest('section').innerText")
    assert re.search(r"\d,\d", page.get_by_test_id("predict-story").inner_text())
    assert page.title().startswith("Attention Lab\u00a0: ")
    assert asked == [], asked  # every view redrew its last answer
    assert "lang=fr" in page.evaluate("document.cookie")  # remembered: the next visit opens in French
    assert not problems.errors


def test_switching_keeps_an_answered_question(open_page):
    """A question answered stays answered: its comparison is written again in French from the same
    measurement, its chapter stays shown, its mark in the navigation says the same verdict."""
    page, problems = open_page("?lang=en&ask=1")
    card = page.locator("[data-question='5']")
    card.scroll_into_view_if_needed()
    page.wait_for_selector("[data-question='5'] button[data-choice]")
    card.locator("button[data-choice]").first.click()
    result = card.locator(".question__result[data-verdict]")
    result.wait_for()
    verdict, measured = result.get_attribute("data-verdict"), result.get_attribute("data-measured")
    # the chapter revealed asks for its figures as they come near: let those asks end first
    page.wait_for_load_state("networkidle")
    asked = switch_to_french(page)
    assert asked == [], asked
    assert (result.get_attribute("data-verdict"), result.get_attribute("data-measured")) == (verdict, measured)
    said = {"right": "Exact.", "close": "Presque.", "wrong": "Pas cette fois."}[verdict]
    assert result.inner_text().startswith(said)
    assert not page.locator("[data-reveal='5']").evaluate("el => el.hidden")
    assert all(card.locator("button[data-choice]").evaluate_all("bs => bs.map((b) => b.disabled)"))
    mark = page.locator(".site-nav a[data-chapter='5'] .site-nav__progress")
    assert mark.get_attribute("data-progress") == verdict
    assert mark.inner_text() in {"✓ juste", "≈ presque", "✗ manqué"}
    assert not problems.errors
