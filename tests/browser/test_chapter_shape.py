"""One shape for a chapter view: every module of static/js/chapters/ exports the same interface
(static/js/contents.js says what each member is), owns elements of its own chapter's section, and
says what it drew in one sentence and as a table; main.js names no chapter, and no chapter imports
another (what two share goes through static/js/store.js)."""

from __future__ import annotations

import re
import time
from html.parser import HTMLParser
from pathlib import Path

import pytest

from app.chapters import CHAPTERS
from tests.browser.conftest import show_everything

ROOT = Path(__file__).resolve().parents[2]
VIEWS = ROOT / "static" / "js" / "chapters"
MAIN = ROOT / "static" / "js" / "main.js"
TEMPLATES = ROOT / "templates" / "chapters"
# the interface: each member's type as `typeof` says it
SHAPE = {"chapter": "string", "title": "string", "figures": "object", "asks": "string", "mount": "function",
         "keys": "function", "panels": "function", "ask": "function", "draw": "function", "failure": "function",
         "describe": "function", "rows": "function"}
ASKS = ["typed", "text", "start", "self"]
PAGE_KEYS = {"lang", "text", "model", "ch", "tour", "ask"}  # url-state.js's own


def modules() -> list[str]:
    return sorted(path.stem for path in VIEWS.glob("*.js"))


class Ids(HTMLParser):
    """The ids of every element of a page."""

    def __init__(self):
        super().__init__()
        self.ids: set[str] = set()

    def handle_starttag(self, tag, attrs):
        if dict(attrs).get("id"):
            self.ids.add(dict(attrs)["id"])


def chapter_names() -> set[str]:
    """The chapters' slugs (their sections' ids), the ids inside their templates, and the views' modules."""
    parser = Ids()
    for path in TEMPLATES.glob("*.html"):
        parser.feed(path.read_text())
    assert {"grad-plot", "cards", "heads-grid", "curves-plot", "recap"} <= parser.ids  # the parser finds them
    return parser.ids | {c.slug for c in CHAPTERS} | set(modules())


def test_main_names_no_chapter():
    """main.js is the text box and the list of chapters: it names no chapter's module, section or element."""
    main = MAIN.read_text()
    named = (name for name in chapter_names() if re.search(rf"(?<![\w-]){re.escape(name)}(?![\w-])", main))
    found = sorted(named)
    assert found == [], f"main.js names chapters' modules or elements: {found}"
    assert "chapters/" not in main


def test_no_chapter_imports_another():
    names = set(modules())
    assert len(names) >= 11
    for name in names:
        imported = re.findall(r"""from\s+["']([^"']+)["']""", (VIEWS / f"{name}.js").read_text())
        assert all(path.startswith("../") for path in imported), (name, imported)


EXPORTS = """async ([urls, shape]) => {
    const found = {};
    for (const url of urls) {
        const view = await import(url);
        found[url] = {
            types: Object.fromEntries(Object.keys(shape).map((k) => [k, typeof view[k]])),
            chapter: view.chapter, asks: view.asks, figures: view.figures,
            state: view.state === undefined ? null : Object.keys(view.state),
            owned: (view.figures || []).map((id) =>
                document.getElementById(id)?.closest("section[data-chapter]")?.dataset.chapter ?? null),
        };
    }
    return found;
}"""


@pytest.mark.browser
def test_every_chapter_module_exports_the_shape(fresh_page):
    page, problems = fresh_page
    urls = [f"/static/js/chapters/{name}.js" for name in modules()]
    found = page.evaluate(EXPORTS, [urls, SHAPE])
    sections = page.locator("main section[data-chapter]").evaluate_all("els => els.map(e => e.dataset.chapter)")
    for url in urls:
        view = found[url]
        assert view["types"] == SHAPE, url
        assert view["asks"] in ASKS and view["chapter"] in sections, url
        assert view["figures"] and all(isinstance(i, str) for i in view["figures"]), url
        assert view["owned"] == [view["chapter"]] * len(view["figures"]), (url, view["figures"], view["owned"])
    # the URL's keys (url-state.js): each declared by one view, none of them the page's own
    declared = [key for view in found.values() for key in view["state"] or []]
    assert len(declared) == len(set(declared)) and not set(declared) & PAGE_KEYS, declared
    assert problems.errors == []


# every view's last answer (requests.js keeps it), said by its own describe and rows for each figure
# it draws (twins.js's plotsOf; null: a panel drawn by another view), or for none when it draws none
SAID = """async (urls) => {
    const { lastAnswer } = await import("/static/js/requests.js");
    const { plotsOf } = await import("/static/js/twins.js");
    const said = {};
    for (const url of urls) {
        const view = await import(url);
        for (const key of view.keys()) {
            const answer = lastAnswer(view, key);
            if (answer === undefined) continue;
            const plots = plotsOf(view, key).filter((plot) => plot.dataset.state === "drawn");
            for (const plot of plots.length ? plots : [undefined]) {
                const describe = view.describe(answer, key, plot);
                if (describe === null || describe === "") continue;
                const name = `${url} ${key} ${plot ? plot.id || plot.dataset.testid : ""}`;
                said[name] = { describe, rows: view.rows(answer, key, plot) };
            }
        }
    }
    return said;
}"""


@pytest.mark.browser
def test_every_view_describes_what_it_drew_in_a_sentence_and_a_table(open_page):
    """After every figure is drawn (the parallel chapter measured, the bottleneck chapter's live run
    trained, the training chapter's pair taught), each view's describe and rows speak of the answer it
    drew: a sentence with no hole, a table whose every row has a cell per header."""
    page, problems = open_page("?tlen=4,8&tl=4&tsteps=40&tc=lstm,lstm-additive&teachsteps=2")
    show_everything(page)
    page.get_by_test_id("timing-measure").click()
    page.wait_for_function("document.getElementById('timing-plot').dataset.state === 'drawn'", timeout=60_000)
    page.get_by_test_id("live-start").click()
    page.wait_for_function("() => document.documentElement.dataset.liveRunning === 'true'")
    page.wait_for_function("() => document.documentElement.dataset.liveRunning === ''", timeout=120_000)
    page.get_by_test_id("teach-start").scroll_into_view_if_needed()
    page.wait_for_function("() => !document.getElementById('teach-start').disabled")
    page.get_by_test_id("teach-start").click()
    page.wait_for_function("() => document.getElementById('teach-bleu').textContent.includes(' after ')",
                           timeout=60_000)
    urls = [f"/static/js/chapters/{name}.js" for name in modules()]
    deadline = time.monotonic() + 60
    while True:  # a view without a figure of its own (the recap) may still be drawing its answer
        said = page.evaluate(SAID, urls)
        missing = set(urls) - {key.split(" ")[0] for key in said}
        if not missing or time.monotonic() > deadline:
            break
        for url in missing:  # a lazy view asks once its first panel nears the screen
            page.evaluate("""async (url) => {
                const view = await import(url);
                document.getElementById(view.figures[0])?.scrollIntoView({block: "center"});
            }""", url)
        page.wait_for_timeout(250)
    assert {key.split(" ")[0] for key in said} == set(urls), "every view drew an answer"
    for key, what in said.items():
        sentence, table = what["describe"], what["rows"]
        assert isinstance(sentence, str) and len(sentence) > 20, key
        assert not re.search(r"\b(undefined|NaN|null|\[object Object\])\b", sentence), (key, sentence)
        assert isinstance(table["caption"], str) and table["caption"], key
        assert table["headers"] and all(isinstance(h, str) for h in table["headers"]), key
        assert table["rows"], (key, table)
        for row in table["rows"]:
            assert len(row) == len(table["headers"]) and all(isinstance(c, str) for c in row), (key, row)
            assert not any(re.search(r"\b(undefined|NaN|null)\b", c) for c in row), (key, row)
    assert problems.errors == []
