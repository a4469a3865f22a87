"""Predict, then see (static/js/questions.js): each chapter's question, answered right and wrong on two
sentences, reveals the number the API measures for that sentence and compares the guess with it; a
teacher's tour link fixes the chapters and their order; "Just show me" shows everything and is
remembered; no request says anything of the answers. One figure embeds in another site's <iframe>,
and the page itself refuses to be framed.

The right answers here are computed from the API's own answers on the tiny random models, with the
rules the questions state (the largest value, the range it falls in), never written in advance."""

from __future__ import annotations

import contextlib
import functools
import http.server
import math
import threading

import httpx
import pytest

from app.chapters import CHAPTERS as ALL
from bench.serving import free_port
from tests.browser.conftest import UPDATE_TIMEOUT_MS, Problems, type_sentence

pytestmark = pytest.mark.browser

FIRST, SECOND = "Je mange du pain.", "Il pleut depuis ce matin, alors nous restons à la maison."
# the questions posed at once (the parallel chapter's is measured after the guess: its own test below)
CHAPTERS = [c.slug for c in ALL if c.question in ("sentence", "fixed")]
FIXED = {c.slug for c in ALL if c.question == "fixed"}
STORED = "attentionLab.questions"


def post(server: str, path: str, body: dict) -> dict:
    answer = httpx.post(f"{server}/api/{path}", json=body, timeout=120)
    answer.raise_for_status()
    return answer.json()


def argmax(values: list[float]) -> int:
    return max(range(len(values)), key=lambda i: values[i])


def in_range(value: float, edges: list[float]) -> int:
    """The index of the range `value` falls in, `edges` splitting the line (as questions/choices.js)."""
    return next((i for i, edge in enumerate(edges) if value < edge), len(edges))


def bucket_of(text: str, health: dict) -> str:
    """The evaluation's length group of `text`, from the groups the API gives (GET /api/health)."""
    words = len(text.split())
    groups = health["length_buckets"]
    return next((b["bucket"] for b in groups if b["max_words"] is None or words <= b["max_words"]),
                groups[0]["bucket"])


def expected(server: str, chapter: str, text: str, catalog: list[dict], health: dict) -> tuple[str, float]:
    """(the right choice's id, the measured number) for `chapter`'s question on `text`, from the API."""
    defaults = health["defaults"]
    if chapter == "training":
        # the model trained longest: the share of its validation loss's fall made by halfway in time
        logs = []
        for curve in httpx.get(f"{server}/api/curves", timeout=60).json():
            points = [p for p in curve["points"] if None not in (p.get("seconds"), p.get("valid_loss"))]
            if len(points) >= 2 and points[0]["valid_loss"] > points[-1]["valid_loss"]:
                logs.append(points)
        points = max(logs, key=lambda ps: ps[-1]["seconds"])
        first, last = points[0], points[-1]
        half = (first["seconds"] + last["seconds"]) / 2
        after = next(i for i, p in enumerate(points) if p["seconds"] >= half)
        a, b = points[max(after - 1, 0)], points[after]
        along = 0 if a["seconds"] == b["seconds"] else (half - a["seconds"]) / (b["seconds"] - a["seconds"])
        middle = a["valid_loss"] + along * (b["valid_loss"] - a["valid_loss"]) if along else b["valid_loss"]
        share = (first["valid_loss"] - middle) / (first["valid_loss"] - last["valid_loss"])
        return str(in_range(share, [0.5, 0.75, 0.9])), share
    if chapter == "point":
        # steps one after another: one per piece for a recurrent encoder, one per layer for the Transformer's
        pieces = len(post(server, "recurrence", {"text": text})["tokens"])
        layers = next(m["layers"] for m in catalog if "encoder" in m["attention_kinds"])
        return ("fewer" if layers < pieces else "same" if layers == pieces else "more"), layers
    if chapter == "recurrence":
        # the first piece's move, set from zero, against the largest later one
        first, *later = post(server, "recurrence", {"text": text})["change"]
        return ("first", first) if first >= max(later) else ("later", max(later))
    if chapter == "gradients":
        plain = next(m["name"] for m in catalog if m["architecture"] == "rnn" and not m["attention"])
        answer = post(server, "gradients", {"text": text, "length": defaults["length"], "initialized": True,
                                            "factors": True})
        curve = next(c for c in answer["curves"] if c["model"] == plain and c["weights"] == "initialized")
        share = curve["norm"][-1] / curve["norm"][0]
        return str(in_range(math.log10(max(share, 1e-300)), [-10, -6, -3, -1])), share
    if chapter == "bottleneck":
        bucket = bucket_of(text, health)
        groups = [b["bucket"] for b in health["length_buckets"]]
        other = groups[0] if bucket == groups[-1] else groups[-1]

        def best(with_attention: bool, at: str) -> float:
            return max(row["bleu"] for m in catalog if bool(m["attention"]) == with_attention
                       for row in m["metrics"]["bleu_by_length"] if row["bucket"] == at)

        mine, theirs = (best(True, at) - best(False, at) for at in (bucket, other))
        return ("0", mine) if mine >= theirs else ("1", theirs)
    if chapter == "attention":
        first = post(server, "scores", {"text": text, "row": 0, "temperature": 1})
        targets = first["target_tokens"]
        words = [i for i, token in enumerate(targets) if any(c.isalpha() for c in token)]
        row = words[len(words) // 2] if words else len(targets) // 2
        again = {"text": text, "model": first["model"], "row": row, "temperature": 1}
        answer = first if row == 0 else post(server, "scores", again)
        weights = answer["weights"]
        return str(argmax(weights)), weights[argmax(weights)]
    if chapter == "scaling":
        value = post(server, "scaling", {"text": text})["summary"]["encoder"]["unscaled_max_weight"]
        return str(in_range(value, [0.5, 0.8, 0.95])), value
    if chapter == "order":
        checks = post(server, "order", {"text": text, "seed": defaults["seed"]})["checks"]
        value = checks["pe_off"]["max_abs_difference"]  # the claim's own case
        return str(in_range(value, [1e-3, 0.1])), value
    if chapter == "heads":
        model = next(m["name"] for m in catalog if "encoder" in m["attention_kinds"])
        contributions = post(server, "heads", {"text": text, "model": model, "heads_off": []})["contributions"]
        cross = [c for c in contributions if c["kind"] == "cross"]
        sharpest = cross[argmax([c["max_weight"] for c in cross])]
        strongest = cross[argmax([c["mean"] for c in cross])]
        share = sharpest["mean"] / strongest["mean"]
        return str(in_range(1 if sharpest is strongest else min(share, 0.999), [0.5, 1])), share
    if chapter == "room":
        model = next(m for m in catalog if "encoder" in m["attention_kinds"])
        scores = {s["off"]: s["bleu"] for s in model["sublayers"]}
        return str(in_range(scores["feed_forward"] / scores[None], [0.25, 0.75])), scores["feed_forward"]
    if chapter == "prediction":
        steps = post(server, "predict", {"text": text, "top_k": defaults["top_k"], "beam_size": 1})["steps"]
        asked = [s for s in steps if len(s["top"]) >= 2]
        step = asked[(len(asked) - 1) // 2]
        likeliest = step["top"][0]["probability"]
        return str(in_range(likeliest, [0.5, 0.8, 0.9])), likeliest
    raise AssertionError(chapter)


@pytest.fixture(scope="module")
def first_visit(chromium, server):
    """A browser that has never seen the page (its own context: nothing stored), its requests recorded."""
    context = chromium.new_context(viewport={"width": 1280, "height": 900}, bypass_csp=True)
    page = context.new_page()
    page.set_default_timeout(UPDATE_TIMEOUT_MS)
    requests: list[dict] = []
    page.on("request", lambda r: requests.append({"url": r.url, "body": r.post_data or ""}))
    yield page, Problems(page), requests
    context.close()


def load(page, url: str) -> None:
    page.goto(url)
    page.wait_for_function("window.attentionLab && window.attentionLab.lastUpdate !== null")


def first_load(page, url: str, stored: str | None = None) -> None:
    """Load `url` as a first visit (nothing stored), or as a reader who stored `stored`."""
    if not page.url.startswith(url.split("/?")[0]):
        page.goto(url.split("?")[0])
    page.evaluate("([key, value]) => value === null ? localStorage.removeItem(key)"
                  " : localStorage.setItem(key, value)", [STORED, stored])
    load(page, url)


def posed(page, chapter: str):
    """The chapter's question card, scrolled near (it asks when near, like a figure), its choices up."""
    card = page.locator(f"[data-question='{chapter}']")
    card.scroll_into_view_if_needed()
    page.wait_for_selector(f"[data-question='{chapter}'] button[data-choice]:not([disabled])")
    return card


def css_string(value: str) -> str:
    """`value` as a quoted CSS string (a piece may hold a quote or a backslash)."""
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def check_answer(page, chapter: str, choice: str, right: str, measured: float, verdicts: set[str]) -> None:
    card = page.locator(f"[data-question='{chapter}']")
    reveal = page.locator(f"[data-reveal='{chapter}']")
    assert reveal.evaluate("el => el.hidden"), "the chapter shows before the reader answers"
    button = card.locator(f"button[data-choice={css_string(choice)}]")
    guess = button.text_content()
    button.click()
    result = card.locator(".question__result[data-verdict]")  # the parallel chapter's comes once measured
    result.wait_for()
    assert result.is_visible() and not reveal.evaluate("el => el.hidden")
    assert result.get_attribute("data-verdict") in verdicts
    shown = float(result.get_attribute("data-measured"))
    assert shown == pytest.approx(measured, rel=1e-9, abs=1e-12), "the revealed number is not the API's"
    text = result.text_content()
    # the sentence compares the guess with the measurement: it names both, and the measured number
    assert guess in text
    right_label = card.locator(f"button[data-choice={css_string(right)}]").text_content()
    # a range, or a group, names the number instead
    ranged = {"training", "recurrence", "gradients", "bottleneck", "parallel", "scaling", "order", "heads",
              "room", "prediction", "point"}
    assert right_label in text or chapter in ranged
    written = page.evaluate("x => import('/static/js/questions/choices.js').then(m => m.power(x))", measured)
    assert written in text, (written, text)
    mark = page.locator(f".site-nav a[data-chapter='{chapter}'] .site-nav__progress")
    assert mark.get_attribute("data-progress") == result.get_attribute("data-verdict")


@contextlib.contextmanager
def at(chapter: str):
    """A failure inside says which chapter's question it was."""
    try:
        yield
    except AssertionError as error:
        raise AssertionError(f"the {chapter} question: {error}") from error


def test_each_question_answered_right_then_wrong_on_two_sentences(first_visit, server, catalog, health):
    """One first visit answers every question right on the first sentence, types the second, then asks
    each again and answers it wrong: each time the chapter shows, with the API's number and a verdict."""
    page, problems, requests = first_visit
    first_load(page, f"{server}/?text={FIRST}")
    problems.clear()
    assert page.get_by_test_id("question-mode-ask").is_checked(), "a first visit is asked first"
    answered = []
    for chapter in CHAPTERS:
        with at(chapter):
            right, measured = expected(server, chapter, FIRST, catalog, health)
            posed(page, chapter)
            before = len(requests)
            check_answer(page, chapter, right, right, measured, {"right"})
            answered += requests[before:]

    type_sentence(page, SECOND)
    for chapter in CHAPTERS:
        with at(chapter):
            card = page.locator(f"[data-question='{chapter}']")
            if chapter in FIXED:  # what it asks does not change with the sentence: answered once, for good
                assert card.get_by_test_id(f"question-{chapter}-again").is_hidden()
                continue
            # answered, the chapter stays shown for the new sentence, and offers its question again
            assert not page.locator(f"[data-reveal='{chapter}']").evaluate("el => el.hidden")
            card.get_by_test_id(f"question-{chapter}-again").click()
            right, measured = expected(server, chapter, SECOND, catalog, health)
            card = posed(page, chapter)
            ids = card.locator("button[data-choice]").evaluate_all("els => els.map(e => e.dataset.choice)")
            wrong = next(i for i in ids if i != right)
            before = len(requests)
            check_answer(page, chapter, wrong, right, measured, {"close", "wrong"})
            answered += requests[before:]
    # answering sends nothing about the guess: what follows a click is the revealed views' own asks
    for request in answered:
        assert any(part in request["url"] for part in ("/api/", "/static/", "/vendor/")), request
        body = request["body"].lower()
        assert not any(word in body for word in ("guess", "verdict", "choice", "question", "progress")), request
    assert not problems.errors


def test_the_order_chapter_s_claim_keeps_its_verdict_until_the_answer(first_visit, server):
    """q.8 asks what the order chapter's claim states: the claim's verdict is hidden until the answer, in
    either language, from the first paint, and again when the question is asked again."""
    written = httpx.get(f"{server}/?ask=1", timeout=60).text
    assert "data-verdict-hidden" in written.split('id="order"')[1].split(">")[0]
    page, problems, _ = first_visit
    first_load(page, f"{server}/?ch=order&text={FIRST}")
    claim = page.locator("section[data-chapter='order'] .chapter__claim")
    verdict, wait = claim.locator("[data-verdict]"), claim.locator("[data-verdict-wait]")
    card = posed(page, "order")
    assert verdict.is_hidden() and wait.is_visible()
    assert "same map" not in claim.inner_text()
    page.get_by_test_id("lang-fr").click()
    page.wait_for_function("document.documentElement.lang === 'fr'")
    assert claim.locator("[data-verdict]").is_hidden() and "ensemble" not in claim.inner_text()
    page.get_by_test_id("lang-en").click()
    page.wait_for_function("document.documentElement.lang === 'en'")
    card.locator("button[data-choice='0']").click()
    claim.locator("[data-verdict]").wait_for(state="visible")
    assert claim.locator("[data-verdict-wait]").is_hidden() and "same map" in claim.inner_text()
    type_sentence(page, SECOND)  # answered: the claim stays whole for a new sentence
    assert claim.locator("[data-verdict]").is_visible()
    card.get_by_test_id("question-order-again").click()
    assert claim.locator("[data-verdict]").is_hidden()
    assert not problems.errors


def test_the_room_chapter_says_what_it_asks_about_before_it_asks(first_visit, server, catalog):
    """What a feed-forward layer and a residual connection are, with the model's own sizes, is in the
    chapter's head, shown while its question waits; its answer is the shipped evaluation's."""
    model = next(m for m in catalog if "encoder" in m["attention_kinds"])
    page, problems, _ = first_visit
    first_load(page, f"{server}/?ch=room&text={FIRST}")
    posed(page, "room")
    head = page.locator("section[data-chapter='room'] .chapter__head")
    assert page.locator("[data-reveal='room']").evaluate("el => el.hidden")
    assert "relu" in head.inner_text() and "x + sublayer(x)" in head.inner_text()
    sizes = page.get_by_test_id("room-sizes").inner_text()
    assert model["name"] in sizes and str(model["width"]) in sizes and str(model["feed_forward"]) in sizes
    assert model["feed_forward"] > 0
    assert not problems.errors


def test_the_timing_question_is_measured_after_the_guess(first_visit, server):
    """The parallel chapter does not depend on the sentence: its question is posed at once, and the server's
    timing (kept once measured) is asked for only after the guess."""
    page, problems, _ = first_visit
    lengths = [4, 8]  # the tiny models, two short lengths: the measurement takes a moment
    timing = post(server, "timing", {"lengths": lengths})
    recurrent, parallel = timing["roles"]["recurrent"], timing["roles"]["parallel"]
    measured = timing["growth"][recurrent] / timing["growth"][parallel]
    right = str(in_range(measured, [0.5, 2]))
    for choice, verdicts in ((right, {"right"}), (str((int(right) + 2) % 3), {"close", "wrong"})):
        first_load(page, f"{server}/?tlen=4,8&text={FIRST}")
        posed(page, "parallel")
        check_answer(page, "parallel", choice, right, measured, verdicts)
        assert str(lengths[-1]) in page.locator("[data-question='parallel'] .question__result").text_content()
    assert not problems.errors


def test_just_show_me_shows_everything_and_is_remembered(first_visit, server):
    page, problems, _ = first_visit
    first_load(page, f"{server}/")
    reveals = page.locator("[data-reveal]")
    assert reveals.count() == len([c for c in ALL if c.question])
    assert all(reveals.evaluate_all("els => els.map(e => e.hidden)"))
    page.get_by_test_id("question-mode-show").check()
    assert not any(reveals.evaluate_all("els => els.map(e => e.hidden)"))
    assert page.locator("[data-question]:visible").count() == 0
    assert page.evaluate(f"localStorage.getItem('{STORED}')") == "show"
    load(page, f"{server}/")
    assert page.get_by_test_id("question-mode-show").is_checked()
    assert not any(reveals.evaluate_all("els => els.map(e => e.hidden)"))
    page.get_by_test_id("question-mode-ask").check()
    assert page.evaluate(f"localStorage.getItem('{STORED}')") == "ask"
    assert not problems.errors


def test_a_tour_link_fixes_the_chapters_their_order_and_the_questions(first_visit, server):
    page, problems, _ = first_visit
    # a reader who skips questions follows a teacher's link
    tour = "order,gradients,attention,nothing,gradients"
    first_load(page, f"{server}/?tour={tour}&ask=1&text={FIRST}", stored="show")
    shown = ("sel => [...document.querySelectorAll(sel)].filter(e => !e.closest('[hidden]'))"
             ".map(e => e.dataset.chapter)")
    assert page.evaluate(shown, "main section[data-chapter]") == ["order", "gradients", "attention"]
    assert page.evaluate(shown, ".site-nav a[data-chapter]") == ["order", "gradients", "attention"]
    assert page.get_by_test_id("question-mode-ask").is_checked()
    posed(page, "order")
    assert page.locator("[data-reveal='order']").evaluate("el => el.hidden")
    page.locator(".site-nav a[data-chapter='gradients']").click()
    page.wait_for_function("new URLSearchParams(location.search).get('ch') === 'gradients'")
    query = page.evaluate("Object.fromEntries(new URLSearchParams(location.search))")
    # still shareable
    assert query["tour"] == "order,gradients,attention" and query["ask"] == "1" and query["text"] == FIRST
    assert page.evaluate(f"localStorage.getItem('{STORED}')") == "show"  # the reader's own choice is kept
    assert not problems.errors


class Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture
def other_site(tmp_path):
    """A second origin (another port) serving the files put in `tmp_path`."""
    handler = functools.partial(Quiet, directory=str(tmp_path))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", free_port()), handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield tmp_path, f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()


def test_a_figure_embeds_in_another_site_and_the_page_does_not(chromium, server, other_site, open_page):
    page, _ = open_page(f"?text={FIRST}")  # the session's page: its reader chose "Just show me"
    button = page.get_by_test_id("embed-recurrence-change")
    button.scroll_into_view_if_needed()
    button.click()
    snippet = page.get_by_test_id("embed-code-recurrence-change").input_value()
    assert snippet.startswith("<iframe src=") and "/embed/recurrence-change?" in snippet
    folder, origin = other_site
    (folder / "slides.html").write_text(f"<!doctype html><title>slides</title>{snippet}"
                                        f'<iframe name="page" src="{server}/"></iframe>', encoding="utf-8")
    context = chromium.new_context(viewport={"width": 1280, "height": 900})  # the policy enforced
    try:
        slides = context.new_page()
        slides.goto(f"{origin}/slides.html")
        embedded = slides.frame_locator("iframe[src*='/embed/']")
        embedded.locator("#recurrence-change .main-svg").first.wait_for(timeout=UPDATE_TIMEOUT_MS)
        assert FIRST in embedded.get_by_test_id("embed-sentence").text_content()
        back = embedded.get_by_test_id("embed-back").get_attribute("href")
        assert "ch=recurrence" in back and "text=" in back
        twin = embedded.locator("#recurrence-change ~ .twin .twin__sentence")
        assert twin.is_visible() and twin.text_content().strip()  # the figure's sentence, shown
        assert embedded.locator("#source").is_hidden() and embedded.locator("#training").is_hidden()
        refused = slides.frame(name="page")  # the page itself: the browser shows its error page instead
        assert refused.url.startswith("chrome-error:") or refused.query_selector("#source") is None
    finally:
        context.close()
    headers = httpx.get(f"{server}/").headers
    assert "frame-ancestors 'none'" in headers["content-security-policy"]
    assert headers["x-frame-options"] == "DENY"
