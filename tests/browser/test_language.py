"""The page in French and in English: every chapter in one language, numbers by its rules, and a
switch that keeps the reader's sentence, chapter and controls and asks the models nothing."""

from __future__ import annotations

import json
import re

import pytest

from app.config import REPO_ROOT
from tests.browser.conftest import (
    COMPACT,
    EXTRA_MODEL,
    asked_of_the_page,
    lost_model,
    sent_so_far,
    show,
    show_everything,
)

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
    translations, the reason the server gives for a model it could not load."""
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
    page, problems = open_page("?lang=en&beam=3&temp=2&len=20&ch=heads&kind=encoder&sel=0,1")
    read(page, "en")
    page.get_by_test_id("heads-grid").scroll_into_view_if_needed()
    page.wait_for_function("new URLSearchParams(location.search).get('ch') === 'heads'")  # the chapter in view
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
    card = page.locator("[data-question='attention']")
    card.scroll_into_view_if_needed()
    page.wait_for_selector("[data-question='attention'] button[data-choice]")
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
    assert not page.locator("[data-reveal='attention']").evaluate("el => el.hidden")
    assert all(card.locator("button[data-choice]").evaluate_all("bs => bs.map((b) => b.disabled)"))
    mark = page.locator(".site-nav a[data-chapter='attention'] .site-nav__progress")
    assert mark.get_attribute("data-progress") == verdict
    assert mark.inner_text() in {"✓ juste", "≈ presque", "✗ manqué"}
    assert not problems.errors


FORMATS = """async () => {
  const i18n = await import('/static/js/i18n.js');
  const { power } = await import('/static/js/questions/choices.js');
  const { encoderSaid } = await import('/static/js/chapters/timing.js');
  const sizes = { lstm: { cell: 'lstm', layers: 1, width: 512, embeddings: 256 },
                  transformer: { cell: 'transformer', layers: 3, width: 256, heads: 4, feed_forward: 1024,
                                 positions: 512 } };
  const said = (lang) => i18n.useLanguage(lang).then(() => ({
    half: i18n.figure(0.5, { zeros: false }), two: i18n.figure(0.5), tiny: i18n.figure(1.1e-13),
    power: power(6.5e-26),
    list: i18n.listOf(['a', 'b', 'c']), sequence: i18n.listOf([3, 1, 2], { style: 'narrow' }),
    lstm: encoderSaid({ encoder_sizes: sizes }, 'lstm'),
    transformer: encoderSaid({ encoder_sizes: sizes }, 'transformer'),
  }));
  const out = { fr: await said('fr'), en: await said('en') };
  await i18n.useLanguage(document.documentElement.lang);
  return out;
}"""


def test_numbers_lists_and_the_server_s_sizes_in_each_language(open_page):
    """One number formatter, one list formatter: 0,5 and « a, b et c » in French; the catalogue's
    scientific form for every small number (the questions' too); the parallel chapter's encoders phrased by
    the page from the sizes the server measured."""
    page, problems = open_page("?lang=fr")
    said = page.evaluate(FORMATS)
    fr, en = said["fr"], said["en"]
    assert (fr["half"], fr["two"], fr["tiny"], fr["power"]) == ("0,5", "0,50", "1,1 × 10⁻¹³", "6,5 × 10⁻²⁶")
    assert (en["half"], en["two"], en["tiny"], en["power"]) == ("0.5", "0.50", "1.1×10⁻¹³", "6.5×10⁻²⁶")
    assert (fr["list"], en["list"]) == ("a, b et c", "a, b, and c")
    assert fr["sequence"] == en["sequence"] == "3, 1, 2"
    assert fr["lstm"] == "encodeur LSTM\u00a0: 1 couche, taille cachée 512, plongements 256"
    assert en["transformer"].startswith("Transformer encoder: 3 layers, d_model 256, 4 heads, d_ff 1024;")
    assert not problems.errors


def test_the_recap_the_server_writes_is_in_french_on_the_french_page(open_page):
    """The recap's rows come phrased in every language of the page: the parallel chapter's row (the server's:
    no view writes it before a timing) is not marked as English, and a switch rewrites it in
    French without asking the server again."""
    page, problems = open_page("?lang=en&ask=0")
    row = page.locator("[data-recap='parallel']")
    row.scroll_into_view_if_needed()
    page.wait_for_function("() => document.querySelector(\"[data-recap='parallel']\").textContent.trim()")
    english = row.inner_text()
    assert "pieces" in english and row.get_attribute("lang") is None
    asked = switch_to_french(page)
    french = row.inner_text()
    assert "jetons de votre phrase" in french and "couches" in french, french
    assert row.get_attribute("lang") is None and not any("/api/recap" in url for url in asked)
    assert not problems.errors


def test_what_the_server_knows_of_a_model_is_said_in_french(open_page, catalog, health):
    """A model the story does not name is summed up from its data in French (not the server's
    English blurb); an unavailable model says so in French and marks the server's reason as
    English; a label and its number in a plot's hover follow French typography."""
    page, problems = open_page("?lang=fr&ch=bottleneck")
    info = next(m for m in catalog if m["name"] == EXTRA_MODEL)
    size = page.evaluate(COMPACT, ["fr", info["parameters"]])
    what = page.locator(f'.card[data-model="{EXTRA_MODEL}"] .card__what')
    assert what.inner_text() == f"Encodeur-décodeur LSTM avec attention, {size} paramètres"
    assert what.get_attribute("lang") is None
    curves = show(page, "scaling-curves")
    hovers = curves.evaluate("gd => gd.data.map((trace) => trace.hovertemplate)")
    assert hovers and all("\u00a0: %{y:.4g}" in hover for hover in hovers), hovers
    points = show(page, "bleu-plot").evaluate("gd => gd.data.flatMap((trace) => trace.customdata)")
    hover = re.compile(r"de BLEU sur [\d\u202f]+ phrases, intervalle à 95\u202f% ")  # one message a point
    assert points and all(hover.search(said) for said in filter(None, points)), points
    gone = EXTRA_MODEL
    routes, reason = lost_model(health, catalog, gone)
    for pattern, handler in routes.items():
        page.route(pattern, handler)
    page.reload()
    page.wait_for_function("window.attentionLab.lastUpdate !== null")
    text = page.get_by_test_id(f"translation-{gone}")
    assert text.inner_text() == "Non disponible" and text.get_attribute("lang") is None
    said = page.get_by_test_id(f"reason-{gone}")
    assert said.inner_text() == reason and said.get_attribute("lang") == "en"
    assert said.get_attribute("title") == "La raison donnée par le serveur, en anglais"
    assert not problems.errors
