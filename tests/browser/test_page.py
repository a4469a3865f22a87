"""The page at `/`, driven like a reader would: type, look, switch, share.

Each test starts from a page loaded afresh (`open_page`, `fresh_page`), so none depends on what
another did before it. What the page should show is read from the server (GET /api/models,
/api/health, the endpoints' answers), never from a list of model names kept here.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import httpx
import pytest

from tests.browser.conftest import COMPACT, EXTRA_MODEL, lost_model, show, show_everything, type_sentence

pytestmark = pytest.mark.browser

# Okabe-Ito, in the order the page gives them to the catalogue's models (static/js/plots.js)
COLOURS = ["rgb(213, 94, 0)", "rgb(0, 114, 178)", "rgb(0, 158, 115)", "rgb(230, 159, 0)", "rgb(204, 121, 167)",
           "rgb(86, 180, 233)"]


def aligning(catalog) -> list[str]:
    """The models with an alignment panel: recurrent, with cross-attention."""
    return [m["name"] for m in catalog if m["recurrent"] and m["cross_attention"]]


def heads_info(catalog) -> dict:
    with_heads = [m for m in catalog if "encoder" in m["attention_kinds"]]
    if not with_heads:
        pytest.skip("no model with self-attention heads is loaded")
    return with_heads[0]


def measured(server) -> list[tuple[str, str]]:
    """(model, weights) of the curves the gradient experiment draws when it is not told which models."""
    answer = httpx.post(f"{server}/api/gradients", json={"text": "x", "length": 2, "initialized": True}).json()
    return [(c["model"], c["weights"]) for c in answer["curves"]]


def cards_answered(page, name: str) -> None:
    """Wait until the bottleneck chapter's card for `name` shows its answer for the current text."""
    page.wait_for_function("sel => !document.querySelector(sel).classList.contains('is-pending')",
                           arg=f"[data-testid='translation-{name}']")
    assert page.get_by_test_id(f"translation-{name}").inner_text().strip() not in ("", "…")


def curve_names(server) -> list[str]:
    """The gradient chart's legend: each measured model as shipped and at initialization."""
    return [f"{m}, {'as shipped' if w == 'trained' else 'at initialization'}" for m, w in measured(server)]


def plot_drawn(page, testid: str) -> bool:
    return show(page, testid).locator(".main-svg").count() > 0


def plot_z(page, testid: str):
    """The z matrix of the first trace of a Plotly div."""
    return show(page, testid).evaluate("gd => gd.data && gd.data[0] && gd.data[0].z")


def test_first_load_shows_every_view(open_page, catalog, server, health):
    page, problems = open_page("?ch=bottleneck")  # its cards on screen: they ask for every model
    numerics = page.get_by_test_id("numerics").inner_text()
    arithmetic = {"fp32": "in fp32,", "fp16-weights": "in fp32 arithmetic on weights read from fp16 copies"}
    assert f"({health['device']}) {arithmetic[health['numerics']['precision']]}" in numerics
    assert "stored column by column" in numerics  # the server's layout, input-major by default
    names = [m["name"] for m in catalog]
    assert page.get_by_test_id("source").input_value().strip(), "the text box starts with an example"
    assert sorted(page.locator(".card").evaluate_all("els => els.map(e => e.dataset.model)")) == sorted(names)
    for name in names:
        cards_answered(page, name)
    panels = page.locator("[data-testid^='attention-']").evaluate_all("els => els.map(e => e.dataset.testid)")
    assert panels == [f"attention-{name}" for name in aligning(catalog)]
    for testid in panels:
        assert plot_drawn(page, testid), testid
    assert plot_drawn(page, "heads-grid") and plot_drawn(page, "head-detail")
    curves = show(page, "gradient-plot").evaluate("gd => gd.data.map(t => t.name)")
    assert curves == curve_names(server)
    assert page.get_by_test_id("gradient-plot").evaluate("gd => gd.layout.yaxis.type") == "log"
    assert plot_drawn(page, "gates-plot")
    assert show(page, "bleu-plot").evaluate("gd => gd.data.map(t => t.name)") == names
    assert problems.errors == [] and problems.dialogs == []


def test_a_new_checkpoint_folder_is_a_new_model_on_the_page(open_page, catalog, server):
    """The sixth folder, named in no code: its card in its group with its blurb and the next
    colour, its translation, its alignment panel, its line in the BLEU chart."""
    page, problems = open_page("?ch=bottleneck")
    info = next(m for m in catalog if m["name"] == EXTRA_MODEL)
    card = page.locator(f'.card[data-model="{EXTRA_MODEL}"]')
    size = page.evaluate(COMPACT, ["en", info["parameters"]])
    assert f"LSTM encoder-decoder with attention, {size} parameters" in card.inner_text()  # from its data
    group = card.evaluate("el => el.closest('.card-group').querySelector('.card-group__title').textContent")
    assert group == "Free to look back at the source"
    colours = page.locator(".card__name").evaluate_all(
        "els => Object.fromEntries(els.map(e => [e.textContent, getComputedStyle(e).borderLeftColor]))")
    assert [colours[m["name"]] for m in catalog] == COLOURS, "the five keep theirs, the sixth gets the next"
    sentence = page.get_by_test_id("source").input_value()
    answer = httpx.post(f"{server}/api/attention", json={"text": sentence, "model": EXTRA_MODEL}).json()
    cards_answered(page, EXTRA_MODEL)
    assert page.get_by_test_id(f"translation-{EXTRA_MODEL}").inner_text() == answer["translation"]
    z = plot_z(page, f"attention-{EXTRA_MODEL}")
    assert (len(z), len(z[0])) == (len(answer["target_tokens"]), len(answer["source_tokens"]))
    lines = show(page, "bleu-plot").evaluate("gd => gd.data.map(t => [t.name, t.line.color])")
    assert [EXTRA_MODEL, "#56B4E9"] in lines
    assert problems.errors == []


def test_the_bleu_chart_shows_each_buckets_interval_from_the_evaluation(fresh_page, catalog):
    """The bottleneck chapter's chart: each point's error bar is the bootstrap interval metrics.json
    gives for it."""
    page, problems = fresh_page
    traces = show(page, "bleu-plot").evaluate(
        "gd => gd.data.map(t => [t.name, t.y, t.error_y.visible, t.error_y.array, t.error_y.arrayminus])")
    evaluated = {m["name"]: m["metrics"]["bleu_by_length"]
                 for m in catalog if (m["metrics"] or {}).get("bleu_by_length")}
    assert [t[0] for t in traces] == list(evaluated)
    for name, y, visible, up, down in traces:
        rows = evaluated[name]
        assert visible and y == [r["bleu"] for r in rows]
        assert up == pytest.approx([r["bleu_high"] - r["bleu"] for r in rows])
        assert down == pytest.approx([r["bleu"] - r["bleu_low"] for r in rows])
    assert problems.errors == []


def test_a_card_is_picked_by_keyboard(fresh_page):
    page, problems = fresh_page
    card = page.locator(f'.card[data-model="{EXTRA_MODEL}"]')
    card.focus()
    page.keyboard.press("Enter")
    assert card.get_attribute("aria-pressed") == "true"
    assert page.locator('.card[aria-pressed="true"]').count() == 1
    assert f"model={EXTRA_MODEL}" in page.url
    widths = show(page, "bleu-plot").evaluate(
        "gd => Object.fromEntries(gd.data.map(t => [t.name, t.line.width]))")
    assert widths[EXTRA_MODEL] > max(w for name, w in widths.items() if name != EXTRA_MODEL)
    assert problems.errors == []


def test_typing_translates_with_every_model(open_page, catalog, server):
    page, problems = open_page("?ch=bottleneck")
    sentence = "Nous avons un chat et un chat."
    type_sentence(page, sentence)
    for name in (m["name"] for m in catalog):
        shown = page.get_by_test_id(f"translation-{name}").inner_text()
        expected = httpx.post(f"{server}/api/translate", json={"text": sentence, "model": name}).json()
        assert shown == (expected["translation"] or "(empty translation)"), name
    # the repeated word "chat" keeps two separate columns: integer axes, tokens as tick labels
    model = aligning(catalog)[0]
    testid = f"attention-{model}"
    tokens = httpx.post(f"{server}/api/attention", json={"text": sentence, "model": model}).json()
    axis = show(page, testid).evaluate("gd => gd.layout.xaxis")
    assert axis["tickvals"] == list(range(len(tokens["source_tokens"])))
    assert len(plot_z(page, testid)[0]) == len(tokens["source_tokens"])
    # hovering a cell names the output token, the source token and the weight
    cover = page.get_by_test_id(testid).locator(".nsewdrag").first.bounding_box()
    page.mouse.move(cover["x"] + 3, cover["y"] + 3)
    hover = page.get_by_test_id(testid).locator(".hovertext")
    hover.wait_for()
    cross = tokens["maps"][0]
    first_source, first_output = cross["cols"][0].removeprefix("▁"), cross["rows"][0].removeprefix("▁")
    assert f"{first_output} → {first_source}" in hover.text_content()
    assert "weight" in hover.text_content()
    # each card gives the BLEU of the typed length's bucket (7 words: 6-10)
    assert page.locator("#cards").inner_text().count("BLEU, 6–10 words") == len(catalog)
    assert "text=Nous+avons" in page.url
    assert problems.errors == []


# Wraps window.fetch to count, for POST /api/compare, the texts with requests in flight at once,
# and to note for each request whether it left while the text box's `input` event was handled
# (the document sees the event before the text box does, on capture, and after it, on bubbling),
# rather than after the pause in typing.
WATCH_REQUESTS = """() => {
    const fetch = window.fetch, texts = new Map();
    window.__inFlight = 0;
    window.__mostTexts = 0;
    window.__asked = [];
    window.__answered = [];  // the texts whose every model's line arrived
    window.__cut = [];  // the texts whose answer the server ended early (a newer text superseded it)
    window.__inInput = false;
    document.addEventListener("input", () => { window.__inInput = true; }, {capture: true});
    document.addEventListener("input", () => { window.__inInput = false; });
    window.fetch = (path, init) => {
        const asks = path === "/api/compare";
        const text = asks ? JSON.parse(init.body).text : null;
        if (asks) window.__asked.push({text, atInput: window.__inInput});
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
        // the answer streams: in flight until the server has sent the line of every model asked
        // (or the body ended), a line at a time
        const models = asks ? JSON.parse(init.body).models.length : 0;
        return fetch(path, init).then((response) => {
            const lines = response.clone().body.pipeThrough(new TextDecoderStream()).getReader();
            let seen = 0;
            const read = () => lines.read().then(({value, done}) => {
                seen += (value || "").split("\\n").length - 1;
                if (asks && seen >= models && !over) window.__answered.push(text);
                if (asks && done && seen < models && !over) window.__cut.push(text);
                if (done || seen >= models) end(); else read();
            }, end);
            read();
            return response;
        }, (error) => { end(); throw error; });
    };
}"""


def test_the_server_is_asked_early_and_a_changed_text_drops_the_old_requests(open_page, catalog):
    """The views wait for a pause in typing, the request does not: it leaves at the keystroke,
    one request for every model on screen (POST /api/compare; the bottleneck chapter's cards show them all).
    When the text changes again, the request
    still running for the old text is aborted (the server then drops its work), so requests about
    two different texts are never in flight together, and each (model, text) is asked once."""
    page, problems = open_page("?ch=bottleneck")
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
    page.evaluate(WATCH_REQUESTS)
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
    assert {model for model, text in sent if text == sentence} == {m["name"] for m in catalog}
    # a request still running when the text changed was dropped before the newer text's left
    # (never two texts in flight); which ones were still running depends on the machine's speed
    # (on a fast one the first text's answer can be complete before the next key), so every older
    # text was answered in full, aborted by the page, or ended early by the server as the newer text
    # arrived (X-Supersede-Key), and some were aborted; the final text's requests all ran
    answered = page.evaluate("window.__answered")
    assert page.evaluate("window.__mostTexts") == 1
    assert aborted and all(sentence.startswith(t) and t != sentence for t in aborted)
    cut = page.evaluate("window.__cut")
    assert {t for t in texts if t != sentence} <= set(aborted) | set(answered) | set(cut)
    assert sentence in answered and sentence not in aborted
    assert len(sent) == len(set(sent))
    # one more key: its text is asked at the keystroke, not after the pause
    box.press("!")
    page.wait_for_function("t => window.attentionLab.lastUpdate?.text === t", arg=sentence + "!")
    asks = page.evaluate("t => window.__asked.filter(a => a.text === t)", sentence + "!")
    assert asks == [{"text": sentence + "!", "atInput": True}]
    assert problems.errors == []


SPECULATION_UNDER_LOAD = """async () => {
  const { Speculation } = await import("/static/js/speculate.js");
  const { ApiError } = await import("/static/js/api.js");
  const sent = [], aborted = [], pending = [];
  // a server that answers only when told: `ok` or a 503 with the Retry-After given
  const fetchRound = (text, names, signal) => {
    sent.push(text);
    const one = {};
    const promise = new Promise((resolve, reject) => Object.assign(one, { resolve, reject }));
    promise.catch(() => {});
    signal.addEventListener("abort", () => {
      aborted.push(text);
      one.reject(new DOMException("stale", "AbortError"));
    });
    pending.push((retryAfter) => (retryAfter === undefined ? one.resolve({ text })
      : one.reject(new ApiError(503, "busy", null, retryAfter))));
    return new Map(names.map((name) => [name, promise]));
  };
  const answer = async (retryAfter) => {
    pending.pop()(retryAfter);
    await new Promise((r) => setTimeout(r, 0));
  };
  const s = new Speculation(fetchRound);
  const keys = (word) => [...word].map((_, i) => word.slice(0, i + 1));

  for (const text of keys("Je m")) s.ahead(text, ["m"]);  // every key asks, the older aborted
  const everyKey = [...sent], abortedThen = [...aborted];
  await answer(1);  // "Je m" refused: the server is full, come back in 1 s
  sent.length = 0;
  let refusal = null;
  await s.ahead("Je ma", ["m"]).get("m").catch((e) => {
    refusal = { status: e.status, retryAfter: e.retryAfter };
  });
  s.ahead("Je man", ["m"]);
  const whileQuiet = [...sent];
  await new Promise((r) => setTimeout(r, 1100));
  s.ahead("Je mang", ["m"]);
  const after = [...sent];
  await answer();
  const got = (await s.ahead("Je mang", ["m"]).get("m")).text;
  return { everyKey, abortedThen, refusal, whileQuiet, after, got };
}"""


def test_a_second_request_for_the_same_text_does_not_stop_the_first(open_page, catalog):
    """Opened mid-page, the page asks about the default text twice: the first screen's model, then the
    chapter's other models. Only a text's first request carries X-Supersede-Key, so the second does not
    stop the first while it streams: every view gets its model's answer (before, one view said the
    answer "ended early")."""
    page, problems = open_page("?ch=attention")
    keyed = []
    page.on("request", lambda r: r.url.endswith("/api/compare") and keyed.append(
        (r.post_data_json["text"], "x-supersede-key" in r.headers)))
    page.reload()
    for model in (m["name"] for m in catalog if m["recurrent"] and m["cross_attention"]):
        plot = show(page, f"attention-{model}")
        assert plot.evaluate("el => !!el.data && !el.querySelector('.plot-empty')"), plot.text_content()
    firsts = {}
    for text, has_key in keyed:
        assert has_key == (text not in firsts), keyed
        firsts.setdefault(text, True)
    assert problems.errors == []


def test_speculation_asks_at_every_key_and_goes_quiet_when_refused(fresh_page):
    """Every key asks about its text at once and aborts the older text's request; after a 503 with
    a Retry-After nothing is sent until it has passed (each ask rejects with the refusal, which the
    views retry after it), then the newest text is asked again."""
    page, _ = fresh_page
    seen = page.evaluate(SPECULATION_UNDER_LOAD)
    assert seen["everyKey"] == ["J", "Je", "Je ", "Je m"]
    assert seen["abortedThen"] == ["J", "Je", "Je "]
    assert seen["refusal"] == {"status": 503, "retryAfter": 1}
    assert seen["whileQuiet"] == []
    assert seen["after"] == ["Je mang"]
    assert seen["got"] == "Je mang"


def test_changing_the_kind_redraws_the_heads(fresh_page, catalog):
    info = heads_info(catalog)
    page, problems = fresh_page
    grid = show(page, "heads-grid")
    assert grid.get_attribute("data-kind") == "cross"
    assert page.locator("#heads-model").inner_text() == info["name"]
    cross = plot_z(page, "head-detail")
    assert grid.evaluate("gd => gd.data.length") >= 1
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
    page.get_by_test_id("pick-layer").select_option(str(info["layers"]))
    page.get_by_test_id("pick-head").select_option(str(info["heads"]))
    assert page.locator("#head-title").inner_text() == f"Layer {info['layers']}, head {info['heads']}"
    assert f"head={info['layers']}.{info['heads']}" in page.url
    assert problems.errors == []


def test_clicking_a_head_enlarges_it(fresh_page, catalog):
    info = heads_info(catalog)
    page, problems = fresh_page
    grid = show(page, "heads-grid")
    cover = grid.locator(".nsewdrag").first.bounding_box()
    x, y = cover["x"] + cover["width"] * 0.97, cover["y"] + cover["height"] * 0.97
    page.mouse.move(x, y)  # Plotly reports a click on the point it last hovered: wait for its label
    grid.locator(".hovertext").wait_for()
    page.mouse.click(x, y)
    last = f"Layer {info['layers']}, head {info['heads']}"  # the bottom-right tile
    page.wait_for_function("t => document.getElementById('head-title').textContent === t", arg=last)
    assert page.get_by_test_id("pick-layer").input_value() == str(info["layers"])
    assert problems.errors == []


@pytest.mark.parametrize("fmt", ["png", "svg"])
def test_plots_export_png_and_svg(fresh_page, catalog, fmt):
    page, problems = fresh_page
    name = f"attention-{aligning(catalog)[0]}"
    plot = show(page, name)
    plot.hover()
    with page.expect_download() as download:
        plot.locator(f'.modebar-btn[data-title="Download plot as {fmt.upper()}"]').click()
    path = download.value.path()
    assert download.value.suggested_filename == f"{name}.{fmt}"  # every plot shares one config
    head = Path(path).read_bytes()[:200]
    assert head.startswith(b"\x89PNG") if fmt == "png" else b"<svg" in head
    assert problems.errors == []


def test_length_control_and_gate_views(fresh_page, health, server):
    page, problems = fresh_page
    longest = health["limits"]["max_gradient_length"]
    plot = show(page, "gradient-plot")
    slider = page.get_by_test_id("grad-length")
    assert slider.get_attribute("max") == str(longest)
    slider.focus()
    page.keyboard.press("End")  # keyboard: the longest input the server takes
    page.wait_for_function("n => document.getElementById('grad-plot').data[0].x.length === n", arg=longest)
    assert plot.evaluate("gd => gd.data.map(t => t.name)") == curve_names(server)
    assert page.locator("#grad-length-value").inner_text() == f"{longest} pieces"
    assert f"len={longest}" in page.url
    gates = show(page, "gates-plot")
    assert gates.evaluate("gd => gd.data[0].z.length") == 3  # input, forget, output averaged
    page.get_by_test_id("gate-view").select_option("forget")
    answer = httpx.post(f"{server}/api/gradients", json={"text": "x", "length": 2}).json()
    page.wait_for_function("document.getElementById('gates-plot').dataset.view === 'forget'")
    assert gates.evaluate("gd => gd.data[0].z.length") == len(answer["gates"]["units"])
    assert gates.evaluate("gd => gd.data[0].z[0].length") == longest
    assert page.locator("#gates-model").inner_text() == answer["gates"]["model"]
    assert problems.errors == []


def test_markup_in_the_input_stays_text(fresh_page, catalog):
    page, problems = fresh_page
    scripts_before = page.locator("script").count()
    hostile = '<script>alert(1)</script><img src=x onerror=alert(2)>'
    type_sentence(page, hostile)  # every view has shown it: a dialog would have opened by now
    assert problems.dialogs == []
    assert page.locator("script").count() == scripts_before
    assert page.locator("main img, main script, .plot script").count() == 0
    assert page.get_by_test_id("source").input_value() == hostile
    for name in (m["name"] for m in catalog):
        card_text = page.get_by_test_id(f"translation-{name}")
        assert card_text.evaluate("el => el.children.length") == 0, "a translation is plain text"
    # Plotly labels: the tokens are shown literally, not read as tags
    labels = show(page, f"attention-{aligning(catalog)[0]}").locator(".xtick text").evaluate_all(
        "els => els.map(e => e.textContent)")
    assert any("<" in label or ">" in label for label in labels), labels
    assert problems.errors == []


def test_messages_for_empty_too_long_and_server_errors(open_page, catalog, health, server):
    page, problems = open_page("?ch=bottleneck")  # every model's card on screen
    longest = health["limits"]["max_chars"]
    status = page.get_by_test_id("status")
    box = page.get_by_test_id("source")
    box.fill("   ")
    page.wait_for_function("document.getElementById('status').hidden === false")
    assert "Type a French sentence" in status.inner_text()
    box.fill("a" * (longest + 1))
    page.wait_for_function("n => document.getElementById('status').textContent.includes(n)",
                           arg=str(longest + 1))
    assert str(longest) in status.inner_text()
    assert page.locator("#char-count").inner_text() == f"{longest + 1} / {longest}"
    assert page.locator("#char-count.is-over").count() == 1
    # a failing server: the message names the problem and the rest of the page stays usable
    page.route("**/api/compare", lambda route: route.fulfill(status=500, body='{"detail": "boom"}',
                                                             content_type="application/json"))
    type_sentence(page, "Il pleut.")
    assert status.get_attribute("data-tone") == "error"
    assert "the server failed on this request (error 500): boom" in status.inner_text()
    page.unroute("**/api/compare")
    # one model failing (its line of the streamed answer is an error): only its card says so
    failing, working = catalog[0]["name"], catalog[-1]["name"]

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
    assert f"{failing}: the server failed on this request (error 500)" in status.inner_text()
    assert "No answer this time (" in page.get_by_test_id(f"translation-{failing}").inner_text()
    expected = httpx.post(f"{server}/api/translate", json={"text": "Il grêle.", "model": working}).json()
    assert page.get_by_test_id(f"translation-{working}").inner_text() == expected["translation"]
    page.unroute("**/api/compare")
    type_sentence(page, "Il neige.")
    assert status.is_hidden()
    assert [e for e in problems.errors if "500" not in e] == []  # the 500s above were on purpose


def test_an_unavailable_model_is_shown_with_its_reason_and_the_rest_works(open_page, catalog, health):
    gone, *kept = aligning(catalog)
    routes, reason = lost_model(health, catalog, gone)
    page, problems = open_page(routes=routes)
    card = page.locator(f'.card[data-model="{gone}"]')
    assert card.get_attribute("aria-disabled") == "true"
    assert page.get_by_test_id(f"translation-{gone}").inner_text() == "Not available"
    said = page.get_by_test_id(f"reason-{gone}")  # the API's own words, marked as English
    assert said.inner_text() == reason and said.get_attribute("lang") == "en"
    assert said.get_attribute("title") == "The server’s reason, in English"
    assert page.get_by_test_id(f"attention-{gone}").count() == 0, "what it has inside is unknown"
    for name in kept:
        assert plot_drawn(page, f"attention-{name}")
    card.dispatch_event("click")  # an unavailable card cannot be selected
    assert card.get_attribute("aria-pressed") == "false"
    assert problems.errors == []


def test_url_state_is_restored_and_values_out_of_bounds_are_ignored(open_page, catalog, health):
    info = heads_info(catalog)
    page, problems = open_page("?text=Bonjour+%C3%A0+tous.&model=lstm&kind=encoder&head=1.2&len=30")
    assert page.get_by_test_id("source").input_value() == "Bonjour à tous."
    assert page.get_by_test_id("kind-encoder").is_checked()
    assert page.locator('.card[data-model="lstm"]').get_attribute("aria-pressed") == "true"
    assert page.get_by_test_id("grad-length").input_value() == "30"
    assert show(page, "gradient-plot").evaluate("gd => gd.data[0].x.length") == 30
    show(page, "heads-grid")
    assert page.locator("#head-title").inner_text() == "Layer 1, head 2"
    longest = health["limits"]["max_gradient_length"]
    page, problems = open_page(f"?model=nobody&kind=sideways&head={info['layers'] + 1}.1&len={longest + 1}")
    assert page.locator(f'.card[data-model="{info["name"]}"]').get_attribute("aria-pressed") == "true"
    assert page.get_by_test_id("kind-cross").is_checked()
    assert int(page.get_by_test_id("grad-length").input_value()) <= longest
    show(page, "heads-grid")
    assert page.locator("#head-title").inner_text() == "Layer 1, head 1"
    assert problems.errors == []


def test_screenshots_at_desktop_and_phone_width(open_page):
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
