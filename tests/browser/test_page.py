"""The page at `/`, driven like a reader would: type, look, switch, share."""

from __future__ import annotations

import tempfile
from pathlib import Path

import httpx
import pytest

from tests.browser.conftest import show, show_everything, type_sentence

pytestmark = pytest.mark.browser

ATTENTION_PLOTS = {"lstm-additive": "attention-lstm-additive", "lstm-dot": "attention-lstm-dot"}


def plot_drawn(page, testid: str) -> bool:
    return show(page, testid).locator(".main-svg").count() > 0


def plot_z(page, testid: str):
    """The z matrix of the first trace of a Plotly div."""
    return show(page, testid).evaluate("gd => gd.data && gd.data[0] && gd.data[0].z")


def test_first_load_shows_every_view(shared_page, available):
    page, problems = shared_page
    assert page.get_by_test_id("source").input_value().strip(), "the text box starts with an example"
    for name in available:
        assert page.get_by_test_id(f"translation-{name}").inner_text().strip() not in ("", "…")
    for name, testid in ATTENTION_PLOTS.items():
        if name in available:
            assert plot_drawn(page, testid), f"{name} alignment grid"
    if "transformer" in available:
        assert plot_drawn(page, "heads-grid") and plot_drawn(page, "head-detail")
    if {"rnn", "lstm"} & set(available):
        assert plot_drawn(page, "gradient-plot")
        curves = show(page, "gradient-plot").evaluate("gd => gd.data.length")
        assert curves == len({"rnn", "lstm"} & set(available))
        assert page.get_by_test_id("gradient-plot").evaluate("gd => gd.layout.yaxis.type") == "log"
    if "lstm" in available:
        assert plot_drawn(page, "gates-plot")
    assert plot_drawn(page, "bleu-plot")
    assert problems.errors == [] and problems.dialogs == []


def test_typing_translates_with_every_model(shared_page, available, server):
    page, problems = shared_page
    sentence = "Nous avons un chat et un chat."
    type_sentence(page, sentence)
    for name in available:
        shown = page.get_by_test_id(f"translation-{name}").inner_text()
        expected = httpx.post(f"{server}/api/translate", json={"text": sentence, "model": name}).json()
        assert shown == (expected["translation"] or "(empty translation)"), name
    # the repeated word "chat" keeps two separate columns: integer axes, tokens as tick labels
    if "lstm-dot" in available:
        tokens = httpx.post(f"{server}/api/attention", json={"text": sentence, "model": "lstm-dot"}).json()
        axis = show(page, "attention-lstm-dot").evaluate("gd => gd.layout.xaxis")
        assert axis["tickvals"] == list(range(len(tokens["source_tokens"])))
        assert len(plot_z(page, "attention-lstm-dot")[0]) == len(tokens["source_tokens"])
        # hovering a cell names the output token, the source token and the weight
        cover = page.get_by_test_id("attention-lstm-dot").locator(".nsewdrag").first.bounding_box()
        page.mouse.move(cover["x"] + 3, cover["y"] + 3)
        hover = page.get_by_test_id("attention-lstm-dot").locator(".hovertext")
        hover.wait_for()
        cross = tokens["maps"][0]
        first_source, first_output = cross["cols"][0].removeprefix("▁"), cross["rows"][0].removeprefix("▁")
        assert f"{first_output} → {first_source}" in hover.text_content()
        assert "weight" in hover.text_content()
    # each card gives the BLEU of the typed length's bucket (7 words: 6-10)
    assert page.locator("#cards").inner_text().count("BLEU, 6–10 words") == 5
    assert "text=Nous+avons" in page.url
    assert problems.errors == []


def test_the_server_is_asked_early_and_a_changed_text_drops_the_old_requests(shared_page, available):
    """The views wait for a pause in typing, the request does not: it leaves at the keystroke,
    one request for every model (POST /api/compare). When the text changes again, the request
    still running for the old text is aborted (the server then drops its work), so requests about
    two different texts are never in flight together, and each (model, text) is asked once."""
    page, problems = shared_page
    sent, aborted = [], []

    def asked(request):
        return request.method == "POST" and request.url.endswith("/api/compare")

    def record(request):
        if asked(request):
            body = request.post_data_json
            sent.extend((model, body["text"]) for model in body["models"])

    def record_failure(request):
        if asked(request):
            aborted.append(request.post_data_json["text"])

    page.on("request", record)
    page.on("requestfailed", record_failure)
    page.evaluate("""() => {  // the most texts with requests in flight at once
        const fetch = window.fetch, texts = new Map();
        window.__inFlight = 0;
        window.__mostTexts = 0;
        window.fetch = (path, init) => {
            const asks = path === "/api/compare";
            const text = asks ? JSON.parse(init.body).text : null;
            window.__inFlight++;
            if (asks) texts.set(text, (texts.get(text) || 0) + 1);
            window.__mostTexts = Math.max(window.__mostTexts, texts.size);
            let over = false;
            const end = () => {  // answered, failed, or aborted (the page dropped it): once
                if (over) return;
                over = true;
                window.__inFlight--;
                if (!asks) return;
                const left = texts.get(text) - 1;
                if (left) texts.set(text, left); else texts.delete(text);
            };
            init?.signal?.addEventListener("abort", end);
            // the answer streams: in flight until its body has been read to the end
            return fetch(path, init).then((response) => {
                response.clone().arrayBuffer().then(end, end);
                return response;
            }, (error) => { end(); throw error; });
        };
    }""")
    first, rest = "Le chien dort", " dans la cuisine."
    box = page.get_by_test_id("source")
    box.fill("")
    with page.expect_request(lambda r: asked(r) and r.post_data_json["text"] == first):
        box.press_sequentially(first, delay=5)
    box.press_sequentially(rest, delay=5)  # while the server still works on the first text
    sentence = first + rest
    page.wait_for_function("t => window.attentionLab.lastUpdate?.text === t", arg=sentence)
    page.wait_for_function("window.__inFlight === 0")
    page.remove_listener("request", record)
    page.remove_listener("requestfailed", record_failure)
    texts = [text for _, text in sent]
    assert first in texts and sentence in texts
    assert {model for model, text in sent if text == sentence} == set(available)
    # the first text's requests were dropped (and those of any text a slow typist paused on),
    # before any about a newer text left; the final text's requests all ran
    assert first in aborted and all(sentence.startswith(t) and t != sentence for t in aborted)
    assert page.evaluate("window.__mostTexts") == 1
    assert len(sent) == len(set(sent))
    assert page.locator("[data-testid=translation-transformer]").inner_text().strip()

    page.evaluate("""() => {
        performance.clearResourceTimings();
        document.addEventListener('keydown', () => { window.__keyAt = performance.now(); },
                                  {once: true, capture: true});  // before the page's own handlers
    }""")
    box.press("!")
    page.wait_for_function("t => window.attentionLab.lastUpdate?.text === t", arg=sentence + "!")
    first_sent = page.evaluate("""Math.min(...performance.getEntriesByType('resource')
        .filter(e => /api[/]compare$/.test(e.name) && e.startTime >= window.__keyAt)
        .map(e => e.startTime)) - window.__keyAt""")
    assert 0 <= first_sent < 60, f"first request {first_sent:.0f} ms after the keystroke (pause: 120 ms)"
    assert problems.errors == []


@pytest.fixture
def transformer_page(shared_page, available):
    if "transformer" not in available:
        pytest.skip("no transformer loaded")
    return shared_page


def test_changing_the_kind_redraws_the_heads(transformer_page):
    page, problems = transformer_page
    grid = show(page, "heads-grid")
    assert grid.get_attribute("data-kind") == "cross"
    cross = plot_z(page, "head-detail")
    n_traces = grid.evaluate("gd => gd.data.length")
    assert n_traces >= 1
    # keyboard: arrow keys move through the radio group
    page.get_by_test_id("kind-cross").focus()
    page.keyboard.press("ArrowRight")
    page.wait_for_function("document.getElementById('heads-grid').dataset.kind === 'encoder'")
    encoder = plot_z(page, "head-detail")
    assert len(encoder) == len(encoder[0]), "encoder self-attention is source x source"
    assert encoder != cross
    page.get_by_label("Decoder self").check()
    page.wait_for_function("document.getElementById('heads-grid').dataset.kind === 'decoder'")
    decoder = plot_z(page, "head-detail")
    assert all(w == 0 for i, row in enumerate(decoder) for w in row[i + 1:]), "causal: 0 above the diagonal"
    assert "kind=decoder" in page.url
    # picking another head enlarges it
    page.get_by_test_id("pick-layer").select_option("2")
    page.get_by_test_id("pick-head").select_option("3")
    assert page.locator("#head-title").inner_text() == "Layer 2, head 3"
    assert "head=2.3" in page.url
    assert problems.errors == []


def test_clicking_a_head_enlarges_it(transformer_page):
    page, problems = transformer_page
    page.get_by_label("Cross").check()
    page.wait_for_function("document.getElementById('heads-grid').dataset.kind === 'cross'")
    grid = show(page, "heads-grid")
    cover = grid.locator(".nsewdrag").first.bounding_box()
    x, y = cover["x"] + cover["width"] * 0.97, cover["y"] + cover["height"] * 0.97
    page.mouse.move(x, y)  # Plotly reports a click on the point it last hovered
    page.wait_for_timeout(100)
    page.mouse.click(x, y)
    page.wait_for_function("document.getElementById('head-title').textContent === 'Layer 3, head 4'")
    assert page.get_by_test_id("pick-layer").input_value() == "3"
    assert problems.errors == []


@pytest.mark.parametrize("fmt", ["png", "svg"])
def test_plots_export_png_and_svg(shared_page, available, fmt):
    page, problems = shared_page
    plot = show(page, "attention-lstm-dot" if "lstm-dot" in available else "bleu-plot")
    name = "attention-lstm-dot" if "lstm-dot" in available else "bleu-by-length"
    plot.hover()
    with page.expect_download() as download:
        plot.locator(f'.modebar-btn[data-title="Download plot as {fmt.upper()}"]').click()
    path = download.value.path()
    assert download.value.suggested_filename == f"{name}.{fmt}"  # every plot shares one config
    head = Path(path).read_bytes()[:200]
    assert head.startswith(b"\x89PNG") if fmt == "png" else b"<svg" in head
    assert problems.errors == []


def test_length_control_and_gate_views(shared_page, available, server):
    if not {"rnn", "lstm"} <= set(available):
        pytest.skip("needs the rnn and lstm models")
    page, problems = shared_page
    plot = show(page, "gradient-plot")
    slider = page.get_by_test_id("grad-length")
    slider.focus()
    page.keyboard.press("End")  # keyboard: the longest input, 200 tokens
    page.wait_for_function("document.getElementById('grad-plot').data[0].x.length === 200")
    assert plot.evaluate("gd => gd.data.map(t => t.name)") == ["RNN", "LSTM"]
    assert page.locator("#grad-length-value").inner_text() == "200 tokens"
    assert "len=200" in page.url
    gates = show(page, "gates-plot")
    assert gates.evaluate("gd => gd.data[0].z.length") == 3  # input, forget, output averaged
    page.get_by_test_id("gate-view").select_option("forget")
    units = httpx.post(f"{server}/api/gradients", json={"text": "x", "length": 2}).json()["gates"]["units"]
    page.wait_for_function("document.getElementById('gates-plot').dataset.view === 'forget'")
    assert gates.evaluate("gd => gd.data[0].z.length") == len(units)
    assert gates.evaluate("gd => gd.data[0].z[0].length") == 200
    assert problems.errors == []
    page.evaluate("window.scrollTo({top: 0, behavior: 'instant'})")  # the next tests type at the top


def test_markup_in_the_input_stays_text(shared_page, available):
    page, problems = shared_page
    scripts_before = page.locator("script").count()
    hostile = '<script>alert(1)</script><img src=x onerror=alert(2)>'
    type_sentence(page, hostile)
    page.wait_for_timeout(200)
    assert problems.dialogs == []
    assert page.locator("script").count() == scripts_before
    assert page.locator("main img, main script, .plot script").count() == 0
    assert page.get_by_test_id("source").input_value() == hostile
    for name in available:
        card_text = page.get_by_test_id(f"translation-{name}")
        assert card_text.evaluate("el => el.children.length") == 0, "a translation is plain text"
    # Plotly labels: the tokens are shown literally, not read as tags
    if "lstm-dot" in available:
        labels = show(page, "attention-lstm-dot").locator(".xtick text").evaluate_all(
            "els => els.map(e => e.textContent)")
        assert any("<" in label or ">" in label for label in labels), labels
    assert problems.errors == []


def test_messages_for_empty_too_long_and_server_errors(shared_page, available, server):
    page, problems = shared_page
    status = page.get_by_test_id("status")
    box = page.get_by_test_id("source")
    box.fill("   ")
    page.wait_for_function("document.getElementById('status').hidden === false")
    assert "Type a French sentence" in status.inner_text()
    box.fill("a" * 501)
    page.wait_for_function("document.getElementById('status').textContent.includes('501')")
    assert "500" in status.inner_text()
    assert page.locator("#char-count.is-over").count() == 1
    # a failing server: the message names the problem and the rest of the page stays usable
    page.route("**/api/compare", lambda route: route.fulfill(status=500, body='{"detail": "boom"}',
                                                             content_type="application/json"))
    type_sentence(page, "Il pleut.")
    assert status.get_attribute("data-tone") == "error"
    assert "server error 500" in status.inner_text()
    page.unroute("**/api/compare")
    # one model failing (its line of the streamed answer is an error): only its card says so
    failing, working = available[0], available[-1]

    def one_model_fails(route):
        try:
            lines = route.fetch().text().splitlines()
        except Exception:  # typing went on: the page dropped this request
            return
        lines = [f'{{"model": "{failing}", "error": "RuntimeError: boom"}}' if f'"model":"{failing}"' in line
                 else line for line in lines]
        route.fulfill(status=200, body="\n".join(lines) + "\n", content_type="application/x-ndjson")

    page.route("**/api/compare", one_model_fails)
    type_sentence(page, "Il grêle.")
    assert f"{failing}: server error 500" in status.inner_text()
    assert "No answer this time." in page.get_by_test_id(f"translation-{failing}").inner_text()
    expected = httpx.post(f"{server}/api/translate", json={"text": "Il grêle.", "model": working}).json()
    assert page.get_by_test_id(f"translation-{working}").inner_text() == expected["translation"]
    page.unroute("**/api/compare")
    type_sentence(page, "Il neige.")
    assert status.is_hidden()
    assert [e for e in problems.errors if "500" not in e] == []
    problems.errors.clear()  # the 500s above were on purpose


def test_an_unavailable_model_is_shown_and_the_rest_works(open_page, server):
    page, _ = open_page()
    page.route("**/api/models", lambda route: route.fulfill(
        json=[m for m in httpx.get(f"{server}/api/models").json() if m["name"] != "lstm-dot"]))
    page.reload()
    page.wait_for_function("window.attentionLab.lastUpdate !== null")
    assert "Not available" in page.get_by_test_id("translation-lstm-dot").inner_text()
    assert "not available" in show(page, "attention-lstm-dot").inner_text()
    assert plot_drawn(page, "attention-lstm-additive")


def test_url_state_is_restored(open_page, available):
    page, problems = open_page("?text=Bonjour+%C3%A0+tous.&model=lstm&kind=encoder&head=1.2&len=30")
    assert page.get_by_test_id("source").input_value() == "Bonjour à tous."
    assert page.get_by_test_id("kind-encoder").is_checked()
    assert page.locator('.card[data-model="lstm"]').get_attribute("aria-pressed") == "true"
    assert page.get_by_test_id("grad-length").input_value() == "30"
    if "rnn" in available:
        assert show(page, "gradient-plot").evaluate("gd => gd.data[0].x.length") == 30
    assert problems.errors == []


def test_screenshots_at_desktop_and_phone_width(open_page, available):
    folder = Path(tempfile.mkdtemp(prefix="attention-lab-shots-"))
    for width in (1280, 390):
        page, problems = open_page(width=width)
        assert page.evaluate("document.documentElement.scrollWidth") <= width, "no sideways scrolling"
        show_everything(page)
        page.get_by_test_id("source").focus()
        path = folder / f"page-{width}.png"
        page.screenshot(path=str(path), full_page=True)
        assert path.stat().st_size > 20_000
        assert problems.errors == []
    print(f"screenshots: {folder}")
