"""The page's words against docs/glossary.md: every term of its Terms table is defined (a `<dfn>`) at
or before its first use in the English page's order; no French message leaves one of the glossary's
English terms in English; and a number is written by the page's one formatter, never by a message or
a script of its own."""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser

import pytest

from app.chapters import CHAPTERS
from app.config import REPO_ROOT

GLOSSARY = REPO_ROOT / "docs" / "glossary.md"
CATALOGUES = REPO_ROOT / "static" / "i18n"
SCRIPTS = REPO_ROOT / "static" / "js"


def catalogue(lang: str) -> dict:
    return json.loads((CATALOGUES / f"{lang}.json").read_text(encoding="utf-8"))


def texts(message) -> list[str]:
    return list(message.values()) if isinstance(message, dict) else [message]


def table(heading: str) -> list[tuple[str, str]]:
    """The (English, French) rows of the glossary's table under `## heading`."""
    section = GLOSSARY.read_text(encoding="utf-8").split(f"## {heading}\n", 1)[1].split("\n## ", 1)[0]
    rows = [line.split("|")[1:3] for line in section.splitlines() if line.startswith("| ")]
    return [(english.strip(), french.strip()) for english, french in rows[1:]]  # the header row left out


def forms(english: str) -> list[str]:
    """The forms a row names: "gate (input, forget, output)" -> ["gate"]; "query / key / value" -> three."""
    return [form.strip() for form in re.split(r"[/,]", re.sub(r"\([^)]*\)", "", english)) if form.strip()]


def pattern(form: str) -> re.Pattern:
    """`form` as a whole word or phrase, a plural allowed: "attention" is not found in "self-attention"."""
    return re.compile(rf"(?<![\w-]){re.escape(form)}(?:s|es)?(?![\w-])", re.IGNORECASE)


def names(words: str, terms: list[str]) -> bool:
    """Whether a `<dfn>`'s words are one of `terms` (or its plural)."""
    return any(pattern(term).fullmatch(words.strip()) for term in terms)


class Reading(HTMLParser):
    """The page's text in reading order, with where each `<dfn>` stands; each chapter's question,
    which the page asks after the chapter's head, read there. Left out: formulas (`<code>`), scripts,
    the document's <head> and the site's header (the lab's name and the chapters' names in the
    navigation name things; they do not use terms)."""

    SKIP = {"script", "style", "code", "template", "head"}

    def __init__(self, questions: dict[str, str]):
        super().__init__(convert_charrefs=True)
        self.text, self.defined, self.questions = [], [], questions
        self.skipping, self.dfn, self.section, self.stack = 0, None, None, []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag in {"br", "img", "input", "meta", "link", "wbr", "hr", "source"}:
            return
        self.stack.append((tag, attrs))
        if tag == "section" and attrs.get("data-chapter"):
            self.section = attrs["data-chapter"]
        if tag in self.SKIP or "site-header" in (attrs.get("class") or "").split():
            self.skipping += 1
            self.stack[-1] = (tag, {**attrs, "skipped": "1"})
        if tag == "dfn":
            self.dfn = len(self.joined())

    def handle_endtag(self, tag):
        while self.stack:
            opened, attrs = self.stack.pop()
            if attrs.get("skipped"):
                self.skipping -= 1
            if opened == "dfn" and self.dfn is not None:
                self.defined.append((self.dfn, self.joined()[self.dfn:]))
                self.dfn = None
            if opened == "header" and "chapter__head" in (attrs.get("class") or "") and self.section:
                self.text.append(" " + self.questions.get(self.section, "") + " ")
            if opened == tag:
                break

    def handle_data(self, data):
        if not self.skipping:
            self.text.append(data)

    def joined(self) -> str:
        return "".join(self.text)


def questions(english: dict) -> dict[str, str]:
    """Each chapter's question in words: its prompts and choices, their placeholders left out."""
    asked = {}
    for chapter in CHAPTERS:
        keys = [k for k in english if k.startswith(f"{chapter.slug}.question.") and not k.endswith(".says")]
        words = " ".join(text for key in keys for text in texts(english[key]))
        asked[chapter.slug] = re.sub(r"\{[^}]*\}", " ", words)
    return asked


@pytest.fixture(scope="module")
def reading(client) -> Reading:
    page = Reading(questions(catalogue("en")))
    page.feed(client.get("/?lang=en").text)
    return page


def test_every_term_is_defined_before_its_first_use(reading):
    """In the English page's order, each glossary term's first `<dfn>` comes at or before the first
    place it is used. A longer term hides the shorter ones it holds ("singular value" is not a use
    of "value", nor "attention weight" one of "weight")."""
    text = reading.joined()
    rows = table("Terms")
    everything = sorted({form for english, _ in rows for form in forms(english)}, key=len, reverse=True)
    late, never = [], []
    for english, _ in rows:
        mine = forms(english)
        masked = text
        for longer in everything:  # the longer terms that hold one of this row's forms, blanked
            if longer not in mine and any(pattern(form).search(longer) for form in mine):
                masked = pattern(longer).sub(lambda m: " " * len(m.group()), masked)
        used = [m.start() for form in mine for m in pattern(form).finditer(masked)]
        if not used:
            continue
        defined = [at for at, words in reading.defined if names(words, mine)]
        if not defined:
            never.append(english)
        elif min(defined) > min(used):
            late.append((english, text[max(min(used) - 60, 0):min(used) + 40]))
    assert not never, f"used and never defined (<dfn>): {never}"
    assert not late, f"used before their definition: {late}"


def test_every_definition_is_a_glossary_term(reading):
    """A `<dfn>` names a term the glossary translates: the two languages then say it the same way."""
    known = [form for english, _ in table("Terms") for form in forms(english)]
    strays = [words for _, words in reading.defined if not names(words, known)]
    assert not strays, strays


def french_words() -> list[tuple[str, str]]:
    """(key, text) of every French message, what is not French prose left out: markup, formulas
    (<code>), placeholders, Plotly's hover templates, model names."""
    out = []
    for key, message in catalogue("fr").items():
        for text in texts(message):
            text = re.sub(r"<code[^>]*>.*?</code>", " ", text)
            text = re.sub(r"%\{[^}]*\}|\{[^}]*\}|<[^>]+>", " ", text)
            out.append((key, re.sub(r"\b(?:lstm-additive|lstm-dot)\b", " ", text)))
    return out


def test_no_french_message_keeps_an_english_term():
    """Each word of a glossary term's English that its French does not share ("feed-forward" of
    "feed-forward layer", "one-hot") appears in no French message."""
    leaks = []
    messages = french_words()
    for english, french in table("Terms") + table("The page's own words"):
        shared = {w.lower() for w in re.findall(r"[\w-]+", french)}
        words = {w for form in forms(english) for w in form.split() if len(w) > 2 and w.lower() not in shared}
        for word in words:
            found = re.compile(rf"(?<![\w-]){re.escape(word)}(?:s)?(?![\w-])", re.IGNORECASE)
            leaks += [(word, key) for key, text in messages if found.search(text)]
    assert not leaks, leaks


# A year ("· 1997", "et al., 2014", "the 1990 answer"): the one number of four digits a message writes
# itself.
YEAR = re.compile(r"\b(?:19[5-9]|20[0-2])\d\b")


@pytest.mark.parametrize("lang", ["en", "fr"])
def test_no_message_writes_a_number_the_formatter_should(lang):
    """A count or a measurement comes into a message as a value (`{count}`), written by the page's
    formatter in the reader's language: a message writes no number of four digits or more (but a
    year), no digits grouped by a separator, and no decimal sign of the other language."""
    other = "," if lang == "en" else "."
    for key, message in catalogue(lang).items():
        for text in texts(message):
            prose = re.sub(r"<code[^>]*>.*?</code>|%\{[^}]*\}|\{[^}]*\}|<[^>]+>", " ", text)
            prose = YEAR.sub(" ", prose)
            assert not re.search(r"\d{4}", prose), (key, text)
            assert not re.search(r"\d[ \u00a0\u202f,.]\d{3}(?!\d)", prose), (key, text)
            assert not re.search(rf"\d{re.escape(other)}\d", prose), (key, text)


def test_scripts_write_numbers_through_the_formatter():
    """Only static/js/i18n.js makes an Intl.NumberFormat; a number rounded with toFixed or
    toPrecision is handed to its `decimal` (which puts the language's decimal sign) or read back as a
    Number, never shown as JavaScript wrote it."""
    for path in sorted(SCRIPTS.rglob("*.js")):
        if path.name == "i18n.js":
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            where = f"{path.relative_to(REPO_ROOT)}:{number}"
            assert "Intl.NumberFormat" not in line, where
            for call in re.finditer(r"\.(toFixed|toPrecision|toExponential)\(", line):
                assert re.search(r"\b(decimal|Number)\(", line[:call.start()]), where
