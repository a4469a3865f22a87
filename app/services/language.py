"""The page's language: which one a request gets, and its words from the same catalogues the
browser reads (static/i18n/<lang>.json, one key per message; static/js/i18n.js). Babel supplies
the locale rules: negotiation against Accept-Language, plural categories, number and list formats,
so the server writes a message exactly as the page's script would. A message names another chapter
by its slug, `{chapter:gradients}`, and reads as its number (app/chapters.py)."""

from __future__ import annotations

import json
import math
import re
from functools import lru_cache

from babel import Locale, negotiate_locale
from babel.lists import format_list
from babel.numbers import format_decimal
from markupsafe import Markup

from app import chapters
from app.config import REPO_ROOT

LANGUAGES = ("en", "fr")
DEFAULT = "en"
COOKIE = "lang"  # the reader's last choice (set by the page's switch)
FOLDER = REPO_ROOT / "static" / "i18n"
_PLACEHOLDER = re.compile(r"\{(\w+)\}")
_CHAPTER = re.compile(r"\{chapter:(\w+)\}")
SUPERSCRIPT = str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")
_RANGE = re.compile(r"^\s*([A-Za-z]{1,8}(?:-[A-Za-z0-9]{1,8})*|\*)\s*(?:;\s*q\s*=\s*([0-9.]+))?\s*$")


def accepted(header: str | None) -> list[str]:
    """The languages of an Accept-Language header, most wanted first (q=0 and malformed ranges dropped)."""
    ranked = []
    for position, part in enumerate((header or "").split(",")[:32]):
        match = _RANGE.match(part)
        if not match:
            continue
        try:
            weight = float(match.group(2)) if match.group(2) is not None else 1.0
        except ValueError:
            continue
        if weight > 0:
            ranked.append((-weight, position, match.group(1).replace("-", "_")))
    return [tag for _, _, tag in sorted(ranked)]


def choose(asked: str | None, remembered: str | None, accept_language: str | None) -> str:
    """?lang=, else the remembered choice, else the browser's languages, else English."""
    for explicit in (asked, remembered):
        if explicit in LANGUAGES:
            return explicit
    return negotiate_locale(accepted(accept_language), list(LANGUAGES)) or DEFAULT


@lru_cache(maxsize=len(LANGUAGES))
def messages(lang: str) -> dict:
    return json.loads((FOLDER / f"{lang}.json").read_text(encoding="utf-8"))


class Words:
    """One language's messages, filled as static/js/i18n.js fills them."""

    def __init__(self, lang: str):
        self.lang = lang if lang in LANGUAGES else DEFAULT
        self.locale = Locale.parse(self.lang)
        self.messages = messages(self.lang)

    def number(self, x) -> str:
        return format_decimal(x, locale=self.locale)

    def figure(self, x: float | None, digits: int = 2, small: float = 1e-3, large: float = 1e4) -> str:
        """A measured number as static/js/i18n.js `figure` writes it: `digits` significant digits
        (0.50, 0,50); below `small` or from `large` on, in the catalogue's scientific form
        (1.1×10⁻¹³, 1,1 × 10⁻¹³). Missing or not finite: "–"."""
        if x is None or not math.isfinite(x):
            return "–"
        if x != 0 and (abs(x) < small or abs(x) >= large):
            mantissa, exponent = f"{x:.{digits - 1}e}".split("e")
            written = format_decimal(float(mantissa), format="0." + "0" * (digits - 1), locale=self.locale)
            raised = str(int(exponent)).translate(SUPERSCRIPT)
            return self.text("number.scientific", mantissa=written, exponent=raised)
        pattern = "0" if abs(x) >= 10 ** (digits - 1) else "@" * digits
        return format_decimal(x, format=pattern, locale=self.locale)

    def list(self, items: list[str]) -> str:
        """Words as one list, as static/js/i18n.js `listOf` writes it ("a, b, and c", « a, b et c »)."""
        return format_list([str(item) for item in items], locale=self.locale) if items else ""

    def plural(self, count) -> str:
        """The plural form for `count`; "other" when there is none, the rule static/js/i18n.js keeps:
        a missing count is no number, not 0 (which is French "one")."""
        return "other" if count is None else self.locale.plural_form(count)

    def text(self, key: str, **params) -> str:
        message = self.messages.get(key, messages(DEFAULT).get(key, key))
        if isinstance(message, dict):
            message = message.get(self.plural(params.get("count")), message["other"])

        def fill(match: re.Match) -> str:
            value = params.get(match.group(1))
            if value is None:
                return match.group(0)
            return self.number(value) if isinstance(value, int | float) else str(value)

        def chapter(match: re.Match) -> str:
            slug = match.group(1)
            return self.number(chapters.number(slug)) if slug in chapters.slugs() else match.group(0)

        return _CHAPTER.sub(chapter, _PLACEHOLDER.sub(fill, message))

    def html(self, key: str, **params) -> Markup:
        """A message written with markup of the page's own (the catalogue is ours, never the reader's)."""
        return Markup(self.text(key, **params))

    def alternates(self) -> list[str]:
        return [lang for lang in LANGUAGES if lang != self.lang]
