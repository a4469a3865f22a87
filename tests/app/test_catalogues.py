"""The page's message catalogues (static/i18n/<lang>.json, read by static/js/i18n.js): every message
in every language, with the same placeholders and the plural forms each language's rules ask for."""

from __future__ import annotations

import json
import re

import pytest

from app.chapters import CHAPTERS
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
def test_no_message_is_a_clause_for_another(lang):
    """A message is whole: one that starts with the punctuation joining it to another (", 4
    minutes", "; try again") is a clause filled into a sentence, whose order and spacing another
    language may not share. A variant of the whole sentence says it instead."""
    separators = {"list.separator", "plot.separators"}  # what joins a list, and Plotly's decimal signs
    for key, message in catalogue(lang).items():
        for text in message.values() if isinstance(message, dict) else [message]:
            assert key in separators or not re.match(r"[\s,;:]", text), (key, text)


@pytest.mark.parametrize("lang", LANGUAGES)
def test_no_key_is_written_twice(lang):
    """A key written twice loads as its last message and hides the first, which some script shows."""
    pairs = json.loads((FOLDER / f"{lang}.json").read_text(encoding="utf-8"), object_pairs_hook=list)
    keys = [key for key, _ in pairs]
    assert len(keys) == len(set(keys)), sorted({key for key in keys if keys.count(key) > 1})


@pytest.mark.parametrize("lang", LANGUAGES)
def test_messages_keep_their_placeholders(lang):
    english = catalogue("en")
    for key, message in catalogue(lang).items():
        assert placeholders(message) == placeholders(english[key]), key
        if isinstance(message, dict):
            assert "other" in message and "count" in placeholders(message), key
        else:
            assert isinstance(message, str) and message.strip(), key


# Keys the page builds from a value instead of writing them out (t(`bottleneck.task.${name}`)): each prefix,
# where its names come from, and so which keys under it are in use.
DYNAMIC = {
    "view.": "a view's title, dashed (requests.js: the status line names a failed view)",
    "summary.": "a model's name (catalog.js: the story's models, summarised in the page's words)",
    "bottleneck.task.": "the live experiment's tasks (GET /api/train)",
    "gradients.filler.": "the long-lag experiment's fillers (GET /api/long-lag)",
    "gradients.gates.": "an LSTM gate's name (chapters/gradients.js)",
    "kind.": "a kind of attention (encoder, decoder, cross)",
    "heads.heads.kind.": "a kind of attention, in the heads chapter's sentences",
    "replay.weights.": "a training step's weights (initialized, snapshot, shipped)",
    "prediction.beam-status.": "a beam hypothesis's status (POST /api/predict's tree)",
    "q.verdict.": "a guess's verdict (right, close, wrong: questions.js)",
    "q.nav.": "the same verdict, marked on the chapter's link",
    # a question's choices, numbered in order (questions/choices.js passes the prefix without its dot)
    "gradients.question.choice.": "ranges", "parallel.question.choice.": "which encoder's time grows more",
    "heads.question.choice.": "shares", "prediction.question.choice.": "ranges",
    "scaling.question.choice.": "ranges", "order.question.choice.": "ranges",
    "room.question.choice.": "shares of BLEU kept",
    "training.question.choice.": "shares of the loss's fall",
    "point.question.choice.": "fewer, as many or more steps",
}
# What every chapter has, under its slug, that the templates write from the list of chapters
# (templates/index.html's navigation and head(), templates/chapters/point.html's recap rows).
EVERY_CHAPTER = ("nav", "eyebrow", "heading", "claim")
EVERY_RECAP_ROW = ("recap.question", "recap.answer")
# the page's templates and scripts, and the services that phrase what the server writes for the page
SOURCES = [*sorted((REPO_ROOT / "templates").rglob("*.html")),
           *sorted((REPO_ROOT / "static" / "js").rglob("*.js")),
           *sorted((REPO_ROOT / "app" / "services").rglob("*.py"))]
CHAPTER_REFERENCE = re.compile(r"\{chapter:(\w+)\}")


KEY = re.compile(r"^[a-z0-9-]+(?:\.[a-z0-9-]+)+$")


def literals() -> set[str]:
    """Every quoted string of the page's template and scripts, and the keys its data-i18n-attr pairs name."""
    found = set()
    for path in SOURCES:
        lines = path.read_text(encoding="utf-8").splitlines()  # comments aside: they name keys in prose
        source = "\n".join(line for line in lines if not line.lstrip().startswith(("//", "*", "/*")))
        found.update(re.findall(r'"([^"\n]*)"', source))
        found.update(re.findall(r"'([^'\n]*)'", source))
        found.update(re.findall(r"`([^`$\n]*)`", source))
        found.update(key for pairs in re.findall(r'data-i18n-attr="([^"]*)"', source)
                     for pair in pairs.split(";") for key in pair.split(":")[1:])
    return found


def test_no_unused_key():
    """Every message is shown somewhere: its key is written in the template or a script, or built
    under one of DYNAMIC's prefixes (which each script must still use)."""
    used = literals()
    scripts = "".join(path.read_text(encoding="utf-8") for path in SOURCES)
    for prefix in DYNAMIC:
        built = f"`{prefix}${{" in scripts or f'"{prefix[:-1]}"' in scripts
        assert built, f"no script builds keys under {prefix}: drop it from DYNAMIC"
    used |= from_the_record()
    unused = [key for key in catalogue("en") if key not in used and not key.startswith(tuple(DYNAMIC))]
    assert not unused, f"messages no page shows: {unused}"


def from_the_record() -> set[str]:
    """The keys the templates build from app/chapters.py's list, one per chapter (or recap row)."""
    return {f"{c.slug}.{name}" for c in CHAPTERS for name in EVERY_CHAPTER} | {
        f"{c.slug}.{name}" for c in CHAPTERS if c.recap for name in EVERY_RECAP_ROW}


def test_every_chapter_has_the_words_every_chapter_has():
    missing = sorted(from_the_record() - set(catalogue("en")))
    assert not missing, missing


@pytest.mark.parametrize("lang", LANGUAGES)
def test_a_message_names_other_chapters_by_slug(lang):
    """`{chapter:<slug>}` reads as that chapter's number (i18n.js, language.py): it names a chapter, and
    the same ones in every language."""
    english = catalogue("en")
    for key, message in catalogue(lang).items():
        texts = message.values() if isinstance(message, dict) else [message]
        named = [slug for text in texts for slug in CHAPTER_REFERENCE.findall(text)]
        assert set(named) <= {c.slug for c in CHAPTERS}, (key, named)
        english_texts = english[key].values() if isinstance(english[key], dict) else [english[key]]
        assert set(named) == {s for text in english_texts for s in CHAPTER_REFERENCE.findall(text)}, key
        assert not re.search(r"\b(chapters?|chapitres?) \d", " ".join(texts), re.I), (key, "a number")


def test_every_key_written_exists():
    """A key written in the template or a script (a dotted name under one of the catalogue's
    namespaces) is in the catalogue: a typo would show the key itself."""
    messages = catalogue("en")
    namespaces = {key.split(".")[0] for key in messages}
    prefixes = {prefix[:-1] for prefix in DYNAMIC}  # a prefix handed to the code that numbers the keys
    written = {s for s in literals() if KEY.match(s) and s.split(".")[0] in namespaces and s not in prefixes}
    missing = sorted(written - set(messages))
    assert not missing, missing


# What is not prose: a placeholder ({name}, Plotly's %{y:.1f}), an HTML tag, an address.
NOT_PROSE = re.compile(r"%?\{[^{}]*\}|<[^>]*>|https?://\S+")


def french_prose() -> list[tuple[str, str]]:
    pairs = []
    for key, message in catalogue("fr").items():
        for text in message.values() if isinstance(message, dict) else [message]:
            pairs.append((key, NOT_PROSE.sub("", text)))
    return pairs


def test_french_spaces_do_not_break_before_their_mark():
    """French puts a space before : ; ? ! % and inside « »; a plain one lets a line break there, so
    it is a no-break space before ':' and a narrow one elsewhere (docs/glossary.md)."""
    for key, text in french_prose():
        assert not re.search(r"[ \u00a0]([;?!%»])|«[ \u00a0]|[ \u202f]:", text), key
        assert not re.search(r"\w[;?!»]|«\w|(?<![\d/])\w:(?!\d)", text), key  # the space is not left out


def test_french_apostrophes_are_one_kind():
    for key, text in french_prose():
        assert "'" not in text, f"{key}: a straight apostrophe, where docs/glossary.md asks for ’"


# A template literal of the page's scripts with its ${...} pieces as \0, Plotly's %{...} and HTML tags
# as breaks: what is left is the words and punctuation the code itself writes around its pieces.
TEMPLATE = re.compile(r"`((?:[^`\\]|\\.)*)`", re.S)
PROSE_IN_CODE = re.compile(r"[A-Za-z]{2,} [A-Za-z]{2,}")  # two words: a sentence written in code
JOINED = re.compile(r"\0[,:]? \0|\0[,:] |\0 \(|^ \0|\0 $")  # pieces joined with a space, comma or colon
CONCATENATED = re.compile(r"""["'][ ,:;]+["']\s*\+\s|\s\+\s*["'][ ,:;]+["']|\s\+\s*t\(|\+= *` """)
# literals that join pieces but are no sentence: memo keys, a cookie, the API's own English detail
NOT_SENTENCES = {
    ("i18n.js", "\0 \0"), ("plots.js", "\0 \0"), ("api.js", "\0: \0"),
    ("live.js", " \0 "),  # a model's name between its checkbox and its label, elements apart
}


def template_texts(source: str) -> list[str]:
    texts = []
    for match in TEMPLATE.finditer(source):
        body, kept, depth, i = match.group(1), [], 0, 0
        while i < len(body):
            if depth == 0 and body.startswith("${", i):
                kept.append("\0")
                depth, i = 1, i + 2
                continue
            if depth:
                depth += {"{": 1, "}": -1}.get(body[i], 0)
            else:
                kept.append(body[i])
            i += 1
        if source[:match.start()].endswith("Error("):
            continue  # an error for the console and its reader, not the page's
        texts.append(re.sub(r"%\{[^}]*\}|<[^>]*>", "|", "".join(kept)))
    return texts


def test_no_sentence_is_assembled_in_code():
    """Words and the punctuation between them come from one catalogue message with named
    placeholders (French spaces a colon, orders words its own way): a script does not join a label
    to its number, a sentence to the next, or write prose in a template literal."""
    found = []
    for path in sorted((REPO_ROOT / "static" / "js").rglob("*.js")):
        lines = path.read_text(encoding="utf-8").splitlines()
        source = "\n".join(line for line in lines if not line.lstrip().startswith(("//", "*", "/*")))
        for text in template_texts(source):
            joins = PROSE_IN_CODE.search(text) or JOINED.search(text)
            if "\0" in text and joins and (path.name, text) not in NOT_SENTENCES:
                found.append(f"{path.name}: `{text}`")
        found += [f"{path.name}: {m.group(0)!r}" for m in CONCATENATED.finditer(source)]
    assert not found, found
