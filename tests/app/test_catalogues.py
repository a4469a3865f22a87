"""The page's message catalogues (static/i18n/<lang>.json, read by static/js/i18n.js): every message
in every language, with the same placeholders and the plural forms each language's rules ask for."""

from __future__ import annotations

import json
import re

import pytest

from app.config import REPO_ROOT

FOLDER = REPO_ROOT / "static" / "i18n"
LANGUAGES = ("en", "fr")
PLACEHOLDER = re.compile(r"\{(\w+)\}")


def catalogue(lang: str) -> dict:
    return json.loads((FOLDER / f"{lang}.json").read_text(encoding="utf-8"))


def placeholders(message) -> set[str]:
    texts = message.values() if isinstance(message, dict) else [message]
    return {name for text in texts for name in PLACEHOLDER.findall(text)}


def test_every_language_has_every_key():
    keys = {lang: set(catalogue(lang)) for lang in LANGUAGES}
    for lang in LANGUAGES:
        missing, extra = keys["en"] - keys[lang], keys[lang] - keys["en"]
        assert not missing and not extra, f"{lang}: missing {missing}, extra {extra}"


@pytest.mark.parametrize("lang", LANGUAGES)
def test_messages_keep_their_placeholders(lang):
    english = catalogue("en")
    for key, message in catalogue(lang).items():
        assert placeholders(message) == placeholders(english[key]), key
        if isinstance(message, dict):
            assert "other" in message and "count" in placeholders(message), key
        else:
            assert isinstance(message, str) and message.strip(), key
