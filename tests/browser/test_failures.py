"""Every way a request can fail, on every kind of request the page makes: the panel that asked says
what went wrong in words, the page throws nothing, and every other panel works."""

from __future__ import annotations

import json
import re
from itertools import combinations

import pytest

from app import chapters
from tests.browser.conftest import show, show_everything

pytestmark = pytest.mark.browser

# how each failure is made (Playwright routing) and what the failed panel then says
JSON = "application/json"


def answer(status: int, detail: str, retry_after: str | None = None, share: str | None = None):
    headers = {"Retry-After": retry_after} if retry_after else {}
    body = json.dumps({"detail": detail, **({"share": share} if share else {})})
    return lambda route: route.fulfill(status=status, content_type=JSON, headers=headers, body=body)


# each failure: how the route answers, and the pattern (a regular expression) of what the page says
FAILURES = {
    "500": (answer(500, "internal error (SystemError); please report it"),
            r"the server failed on this request \(error 500\)"),
    "503": (answer(503, "the server is busy (256 model requests in progress); try again in 1 s", "2"),
            r"the server is busy: it has more requests than it takes at once; try again in [12]\ss"),
    "429": (answer(429, "your share of timing (3 measurements per 600 s) is used; ask again in 3 s", "3",
                   share="timing"),
            r"this page has used its share of timing measurements on this server; it frees in [1-3]\ss"),
    "abort": (lambda route: route.abort("aborted"), "the server could not be reached"),
    "offline": (lambda route: route.abort("internetdisconnected"), "the server could not be reached"),
}
# each model request of the page -> where its failure is said
# Each route the page asks (app/chapters.py) -> where its failure is said; the first screen's on every card.
PANELS = {f"**{r.path}": r.failure for r in chapters.routes() if r.failure and r not in chapters.FIRST_SCREEN}
COMPARE = chapters.FIRST_SCREEN[0].failure  # POST /api/compare: every model's card
# a panel drawn from another route's answer too says that one's failure: the gradients chapter's
# gradients by lag
# are measured at the lags the long-lag run tried
NEEDS = {"**/api/long-lag/gradients": "**/api/long-lag"}
CATALOG = ("**/api/health", "**/api/models")  # without them the page cannot build itself
NETWORK_NOISE = re.compile(r"Failed to load resource")  # Chromium's own line for each failed request


def says(text: str, failure: str) -> bool:
    """`text` says `failure`'s message. A refusal's seconds may have counted down: while they run,
    the page asks nothing and answers a view that asks with what is left of them (speculate.js), and
    on a slow machine a view can ask a second or more after the refusal."""
    return re.search(FAILURES[failure][1], text) is not None


def page_errors(problems) -> list[str]:
    return [e for e in problems.errors if not NETWORK_NOISE.search(e)] + problems.dialogs


def visit(open_page, failing: dict[str, str]):
    """The page loaded with each pattern of `failing` answered by its failure and every figure shown
    (and the parallel chapter's measurement asked for, when it is to fail)."""
    page, problems = open_page(routes={pattern: FAILURES[failure][0] for pattern, failure in failing.items()})
    show_everything(page)
    if "**/api/timing" in failing:  # measured only when the reader asks; its failure said at once
        page.get_by_test_id("timing-measure").click()  # (a refusal's asks again take seconds more)
        pattern = FAILURES[failing["**/api/timing"]][1]
        status = "document.getElementById('timing-status').textContent"
        page.wait_for_function(f"re => new RegExp(re).test({status})", arg=pattern)
    return page, problems


def said(page, selector: str) -> list[str]:
    return page.locator(selector).evaluate_all("els => els.map(e => e.textContent)")


# Every kind of failure on every request, in as many visits as there are kinds: in visit k the
# translations fail with kind k and panel i with kind i + k, so across the visits each panel says
# each kind once, and in each visit kinds differ from panel to panel.
KINDS = list(FAILURES)
AT_ONCE = [{pattern: KINDS[(i + k) % len(KINDS)] for i, pattern in enumerate(PANELS)}
           for k in range(len(KINDS))]


@pytest.mark.parametrize("k", range(len(KINDS)), ids=KINDS)
def test_every_request_failing_at_once_is_said_panel_by_panel_and_on_every_card(open_page, catalog, k):
    failing = {**AT_ONCE[k], "**/api/compare": KINDS[k]}
    page, problems = visit(open_page, failing)
    for pattern, selector in PANELS.items():
        texts = said(page, selector)
        allowed = [failing[p] for p in (pattern, NEEDS.get(pattern)) if p]  # either request of a panel of two
        assert texts and all(any(says(t, f) for f in allowed) for t in texts), (pattern, texts)
    cards = said(page, COMPARE)
    assert len(cards) == len(catalog) and all(says(t, KINDS[k]) for t in cards), cards
    # drawn from the heads view's translation, the summed head says that failure (not "pick a kind")
    assert says(page.get_by_test_id("heads-summed").inner_text(), KINDS[k])
    status = page.get_by_test_id("status")
    assert status.get_attribute("data-tone") == "error" and says(status.inner_text(), KINDS[k])
    assert page_errors(problems) == []


def separating(patterns: list[str], visits: int) -> list[list[str]]:
    """Which patterns fail in each of `visits` visits, so that for any two patterns p and q some visit
    fails p and not q: pattern i fails in the i-th pair of visits (no pair holds another), so every
    pattern fails in two visits. Thirteen patterns take six visits (15 pairs), not thirteen."""
    pairs = list(combinations(range(visits), 2))
    assert len(pairs) >= len(patterns), "more patterns than pairs of visits"
    fails_in = dict(zip(patterns, pairs[:len(patterns)], strict=True))
    return [[p for p in patterns if visit in fails_in[p]] for visit in range(visits)]


# each pattern's failure, the same in every visit that fails it
FAILS_WITH = {pattern: list(FAILURES)[i % len(FAILURES)] for i, pattern in enumerate(PANELS)}
VISITS = separating(list(PANELS), 6)
assert all(any(p in v and q not in v for v in VISITS) for p in PANELS for q in PANELS if p != q)


@pytest.mark.parametrize("failing", VISITS, ids=lambda failing: "+".join(p.split("/api/")[1] for p in failing))
def test_one_request_failing_leaves_every_other_panel_working(open_page, failing):
    """Each failed request is said on its own panel, and only there: every panel whose requests all
    came is drawn and says no failure. Across the visits, every request fails where every other comes."""
    page, problems = visit(open_page, {pattern: FAILS_WITH[pattern] for pattern in failing})
    for pattern in failing:
        texts = said(page, PANELS[pattern])
        # a panel drawn from two requests says the failure of either (abort and offline say the same)
        allowed = [FAILS_WITH[p] for p in (pattern, NEEDS.get(pattern)) if p in failing]
        assert texts and all(any(says(t, f) for f in allowed) for t in texts), (pattern, texts)
    for other, selector in PANELS.items():
        if other in failing or NEEDS.get(other) in failing:
            continue
        assert not [t for t in said(page, selector) if "could not" in t or "failed" in t], other
    assert said(page, COMPARE) == []
    assert page.locator(".plot .main-svg").count() >= 10  # the other figures are drawn
    assert page_errors(problems) == []


@pytest.mark.parametrize("pattern", CATALOG)
@pytest.mark.parametrize("failure", FAILURES)
def test_a_page_that_cannot_list_the_models_says_so(open_page, pattern, failure):
    page, problems = open_page(routes={pattern: FAILURES[failure][0]})
    status = page.get_by_test_id("status")
    assert "Could not list the models" in status.inner_text()
    assert says(status.inner_text(), failure)
    assert page_errors(problems) == []


def test_a_reader_typing_leaves_no_traceback_in_the_log(open_page, server, server_log):
    """Typing supersedes work all the time (each keystroke's requests replace the last): the log
    has a line per request and no traceback (the dropped work is counted instead: test_request_log.py)."""
    page, problems = open_page()
    start = server_log.stat().st_size
    box = page.get_by_test_id("source")
    box.fill("")
    box.press_sequentially("Je mange du pain.", delay=20)
    for chapter in page.locator("section.chapter").all():
        chapter.scroll_into_view_if_needed()
        page.wait_for_timeout(150)
    for sentence in (" Il fait froid.", " Où est la gare ?", " Le chat dort."):
        box.press("End")
        box.press_sequentially(sentence, delay=20)
    typed = box.input_value()
    page.wait_for_function("t => window.attentionLab.lastUpdate?.text === t", arg=typed)
    with server_log.open() as log:
        log.seek(start)
        written = log.read()
    assert "Traceback" not in written and "never retrieved" not in written
    assert re.search(r"POST /api/compare 200 \d+\.\d ms id=[0-9a-f]{8}", written)
    assert written.count("POST /api/") >= 10
    assert page_errors(problems) == []


def busy_once(status: int, seconds: str):
    """A route handler: the first request is refused (`status`, Retry-After `seconds`), the rest go through."""
    refused = []

    def handle(route):
        if refused:
            route.continue_()
            return
        refused.append(route.request.url)
        route.fulfill(status=status, content_type=JSON, headers={"Retry-After": seconds},
                      body='{"detail": "too many model requests at once"}')

    return handle, refused


def test_a_busy_server_is_asked_again_after_its_retry_after(open_page):
    """A 503 or 429 that names a Retry-After is said on the panel that asked (and in the status line),
    with when the page asks again; then it asks again by itself, and both show the answer."""
    page, problems = open_page("?ch=order")
    show(page, "order-maps")  # near the screen: the new text's round asks for it at once
    order, refused = busy_once(503, "2")
    page.route("**/api/order", order)
    page.get_by_test_id("source").fill("Il pleut.")
    said = page.locator("[data-testid=order-maps] .plot-empty")
    said.wait_for()
    # the page writes a number and its unit with a no-break space between them
    assert "it has more requests than it takes at once; try again in 2\u00a0s" in said.inner_text()
    assert "Asking again in 2\u00a0s." in said.inner_text()
    page.wait_for_function("t => document.getElementById('status').textContent.includes(t)",
                           arg="order experiment: the server is busy")
    page.wait_for_function("document.getElementById('order-maps').dataset.state === 'drawn'")
    page.wait_for_function("document.getElementById('status').hidden")
    assert len(refused) == 1
    assert page_errors(problems) == []
