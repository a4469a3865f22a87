"""The page's language (app/services/language.py): ?lang=, then the remembered choice, then the
browser's Accept-Language, then English; and the template written from the same catalogues as the
page's script, with Babel's plural and number rules."""

from __future__ import annotations

import json
import re
from html import unescape

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from app.routes import pages
from app.services import language


@pytest.mark.parametrize(("asked", "remembered", "header", "chosen"), [
    ("fr", "en", "en-GB", "fr"),  # the URL wins
    ("xx", "fr", "en", "fr"),  # an unknown ?lang= is ignored; the cookie is next
    (None, None, "fr-CH, fr;q=0.9, en;q=0.8", "fr"),
    (None, None, "de-DE, fr;q=0.5, en;q=0.4", "fr"),  # the most wanted language we have
    (None, None, "en;q=0.2, fr;q=0.9", "fr"),  # by weight, not by place
    (None, None, "fr;q=0, en", "en"),  # q=0: not wanted at all
    (None, None, "de, *;q=0.1", "en"),
    (None, None, "", "en"),
    (None, None, "garbage;;q=x, ,", "en"),
])
def test_choose(asked, remembered, header, chosen):
    assert language.choose(asked, remembered, header) == chosen


def test_words_fill_plurals_and_numbers_by_the_locale():
    fr, en = language.Words("fr"), language.Words("en")
    assert fr.text("gradients.gradients.tokens", count=1) == "1 jeton"
    assert fr.text("gradients.gradients.tokens", count=80) == "80 jetons"
    assert en.text("gradients.gradients.tokens", count=1) == "1 piece"
    assert fr.number(0.83) == "0,83" and en.number(0.83) == "0.83"
    assert fr.text("footer.credit", credit="Tatoeba") == "Paires de phrases\u00a0: Tatoeba."
    assert language.Words("xx").lang == "en"


def test_the_server_writes_numbers_as_the_page_does_in_each_language():
    numbers = (0.9976, 11.2, 3.3e-7, 0.5, 12345, None)
    en, fr = language.Words("en"), language.Words("fr")
    assert [en.figure(x) for x in numbers] == ["1.0", "11", "3.3×10⁻⁷", "0.50", "1.2×10⁴", "–"]
    assert [fr.figure(x) for x in numbers] == ["1,0", "11", "3,3 × 10⁻⁷", "0,50", "1,2 × 10⁴", "–"]
    assert fr.list(["rnn", "lstm", "transformer"]) == "rnn, lstm et transformer"


def test_a_plural_message_without_a_count_takes_the_other_form_as_the_page_s_script_does():
    """static/js/i18n.js: a missing count is no number, whose form is "other" in every language;
    0 would be French "one"."""
    fr, en = language.Words("fr"), language.Words("en")
    assert fr.text("gradients.gradients.tokens") == "{count} jetons"
    assert fr.text("gradients.gradients.tokens", count=None) == "{count} jetons"
    assert en.text("gradients.gradients.tokens") == "{count} pieces"
    assert fr.text("gradients.gradients.tokens", count=0) == "0 jeton"  # a count of 0 keeps French's own rule


@pytest.fixture(scope="module")
def page_client():
    app = FastAPI()
    app.include_router(pages.router)
    return TestClient(app)


@pytest.mark.parametrize(("query", "headers", "lang", "title"), [
    ("", {}, "en", "Attention Lab: watch translation models read your sentence"),
    ("?lang=fr", {}, "fr", "Attention Lab\u00a0: regardez des modèles de traduction lire votre phrase"),
    ("", {"accept-language": "fr-FR,fr;q=0.9"}, "fr", "Attention Lab\u00a0: regardez"),
    ("", {"cookie": "lang=fr"}, "fr", "Attention Lab\u00a0: regardez"),
    ("?lang=en", {"cookie": "lang=fr"}, "en", "Attention Lab: watch"),
])
def test_the_page_in_the_chosen_language(page_client, query, headers, lang, title):
    response = page_client.get(f"/{query}", headers=headers)
    html = response.text
    assert response.status_code == 200
    assert f'<html lang="{lang}"' in html
    assert re.search(r"<title[^>]*>([^<]*)</title>", html).group(1).startswith(title)
    assert "Accept-Language" in response.headers["vary"] and response.headers["content-language"] == lang
    for other in language.LANGUAGES:  # absolute alternates, one per language, and the default
        assert f'hreflang="{other}" href="http://testserver/?lang={other}"' in html
    assert 'hreflang="x-default" href="http://testserver/"' in html
    assert re.search(rf'data-lang="{lang}"[^>]*aria-current="true"', html)
    assert "{{" not in html and "}}" not in html


def test_every_marked_word_is_the_catalogues(page_client):
    """What the server wrote into each data-i18n element is the chosen catalogue's message."""
    written = page_client.get("/?lang=fr").text
    words = language.Words("fr")
    for key, attributes, text in re.findall(r'data-i18n="([^"]+)"([^>]*)>([^<]*)<', written):
        params = re.search(r"data-i18n-params='([^']*)'", attributes)
        if key != "footer.credit":
            assert unescape(text) == words.text(key, **json.loads(params.group(1) if params else "{}")), key
