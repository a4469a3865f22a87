"""The attention chapter's one line and the scaling, order, heads, room and prediction chapters in the
browser, on the tiny models: each chapter opens from a shared URL and draws its figures for the typed
sentence, its controls work and live in the URL, and every number its prose states is the API's own."""

from __future__ import annotations

import httpx
import pytest

from tests.browser.conftest import show
from tests.browser.test_chapters import chapter_in_url, facts, in_view
from tests.browser.test_vanishing import number

pytestmark = pytest.mark.browser
SENTENCE = "Je mange du pain."


def post(server: str, path: str, body: dict) -> dict:
    answer = httpx.post(f"{server}{path}", json={"text": SENTENCE, **body}, timeout=60)
    answer.raise_for_status()
    return answer.json()


def test_the_attention_chapter_draws_one_head_s_softmax_rows_and_states_the_check(open_page, server):
    page, problems = open_page("?ch=attention&lhead=1")
    plot = show(page, "lookup-plot")
    page.wait_for_function("document.getElementById('lookup-plot').dataset.head === '1'")
    answer = post(server, "/api/lookup", {"head": 1})
    assert plot.evaluate("gd => gd.data[0].z") == answer["weights"]
    assert plot.evaluate("gd => gd.layout.yaxis.ticktext.length") == len(answer["source_tokens"])
    said = facts(page, "lookup-story")
    S, d_k = answer["shapes"]["Q"]
    assert said["line"] == f"softmax(({S}×{d_k}) · ({d_k}×{S}) / √{d_k}) · ({S}×{d_k}) = {S}×{d_k}"
    assert said["head"] == "2" and said["d-k"] == str(d_k)
    assert number(said["difference"]) == pytest.approx(answer["max_abs_difference"], rel=0.06)
    assert number(said["top-weight"]) == pytest.approx(max(map(max, answer["weights"])), rel=0.06)
    described = plot.get_attribute("aria-describedby")
    assert described and "first encoder layer" in page.locator(f"[id='{described}']").inner_text()
    page.get_by_test_id("lookup-head").select_option("0")
    page.wait_for_function("new URLSearchParams(location.search).get('lhead') === '0'")
    page.wait_for_function("document.getElementById('lookup-plot').dataset.head === '0'")
    assert plot.evaluate("gd => gd.data[0].z") == post(server, "/api/lookup", {"head": 0})["weights"]
    assert problems.errors == []


def test_the_scaling_chapter_states_the_saturation_the_api_measured(open_page, server):
    page, problems = open_page("?ch=scaling")
    assert in_view(page, "scaling")
    curves = show(page, "scaling-curves")
    answer = post(server, "/api/scaling", {})
    sampled = answer["sampled"]
    assert curves.evaluate("gd => gd.layout.xaxis.type") == "log"
    assert curves.evaluate("gd => gd.data[0].y") == [r["max_weight"] for r in sampled["unscaled"]]
    assert curves.evaluate("gd => gd.data[1].y") == [r["max_weight"] for r in sampled["scaled"]]
    assert curves.evaluate("gd => gd.dataset.dk") == str(answer["d_k"])
    heads = show(page, "scaling-heads")
    assert heads.evaluate("gd => gd.data[0].y") == [h["raw_std"] for h in answer["heads"]]
    page.wait_for_function("document.querySelector('#scaling-story [data-fact=d-k]').textContent !== ''")
    said = facts(page, "scaling-story")
    assert said["d-k"] == str(answer["d_k"])
    at = sampled["at_model_d_k"]
    assert number(said["raw-max"]) == pytest.approx(at["unscaled"]["max_weight"], rel=0.06)
    assert number(said["scaled-max"]) == pytest.approx(at["scaled"]["max_weight"], rel=0.06)
    bigger = at["scaled"]["gradient"] > at["unscaled"]["gradient"]
    assert said["gradient-direction"] == ("larger" if bigger else "smaller")
    assert f"d_k = {answer['d_k']}" in page.locator("[data-recap='scaling']").inner_text()
    chapter_in_url(page, "scaling")
    assert problems.errors == []


def drawn_permutation(page, permutation: list[int]) -> None:
    page.wait_for_function("p => document.getElementById('order-maps').dataset.permutation === p",
                           arg=",".join(map(str, permutation)))


def test_the_order_chapter_shuffles_and_states_both_differences(open_page, server):
    page, problems = open_page("?ch=order")
    show(page, "order-maps")
    answer = post(server, "/api/order", {"seed": 1})
    drawn_permutation(page, answer["permutation"])
    page.wait_for_function("document.querySelector('#order-story [data-fact=permutation]').textContent !== ''")
    said = facts(page, "order-story")
    off, on = (answer["checks"][c]["max_abs_difference"] for c in ("pe_off", "pe_on"))
    assert off < 1e-5 < on, "the permutation identity holds without positional encoding only"
    assert number(said["off-difference"]) == pytest.approx(off, rel=0.06)
    assert number(said["on-difference"]) == pytest.approx(on, rel=0.06)
    assert said["off-verdict"].startswith("float rounding") and said["on-verdict"].startswith("far above")
    assert said["on-shuffled"] == answer["translations"]["pe_on"]["shuffled"]
    maps = page.get_by_test_id("order-maps")
    assert maps.evaluate("gd => gd.data[1].z") == answer["checks"]["pe_off"]["shuffled"][0]
    table = show(page, "order-pe")
    assert table.evaluate("gd => gd.data[1].z") == answer["positional_encoding"]["similarity"]
    page.get_by_test_id("order-shuffle").click()
    page.wait_for_function("new URLSearchParams(location.search).get('shuffle') === '2'")
    drawn_permutation(page, post(server, "/api/order", {"seed": 2})["permutation"])
    assert "shuffled" in page.locator("[data-recap='order']").inner_text()
    assert problems.errors == []


def test_the_order_chapter_restores_its_seed_and_head_from_the_url(open_page, server):
    page, problems = open_page("?ch=order&shuffle=3&ohead=1")
    assert in_view(page, "order")
    maps = show(page, "order-maps")
    answer = post(server, "/api/order", {"seed": 3})
    drawn_permutation(page, answer["permutation"])
    assert page.get_by_test_id("order-head").input_value() == "1"
    assert maps.evaluate("gd => gd.dataset.head") == "1"
    assert maps.evaluate("gd => gd.data[2].z") == answer["checks"]["pe_on"]["original"][1]
    assert problems.errors == []


def with_heads(catalog) -> dict:
    return next(m for m in catalog if "encoder" in m["attention_kinds"])


def cell(page, testid: str, axis: str, x: float, y: float) -> list[float]:
    """Where on the screen a heatmap's cell at data coordinates (x, y) of axes `axis` ('', '2', '3') is."""
    return page.get_by_test_id(testid).evaluate(
        """(gd, [axis, x, y]) => { const l = gd._fullLayout, xa = l['xaxis' + axis], ya = l['yaxis' + axis];
           const box = gd.getBoundingClientRect();
           return [box.left + xa._offset + xa.l2p(x), box.top + ya._offset + ya.l2p(y)]; }""", [axis, x, y])


def click_cell(page, testid: str, axis: str, x: float, y: float) -> None:
    page.mouse.click(*cell(page, testid, axis, x, y))


def test_the_heads_chapter_a_head_clicked_off_translates_again(open_page, server, catalog):
    info = with_heads(catalog)
    page, problems = open_page("?ch=heads")
    show(page, "heads-contrib")
    layer, head = info["layers"] - 1, 0
    click_cell(page, "heads-contrib", "3", head + 1, layer + 1)  # the cross heads' map, the third
    key = f"cross.{layer + 1}.{head + 1}"
    page.wait_for_function("k => new URLSearchParams(location.search).get('off') === k", arg=key)
    page.wait_for_function("k => document.getElementById('heads-contrib').dataset.off === k", arg=key)
    answer = post(server, "/api/heads", {"heads_off": [{"kind": "cross", "layer": layer, "head": head}]})
    original = answer["effect"]["original"]
    delta = original["log_prob_heads_off"] - original["log_prob_all_heads"]
    effect = page.get_by_test_id("heads-effect")
    assert float(effect.get_attribute("data-delta")) == pytest.approx(delta, abs=1e-9)
    assert answer["effect"]["changed"]["translation"] in effect.inner_text()
    changed = [i for i, t in enumerate(answer["effect"]["changed"]["tokens"])
               if i >= len(original["tokens"]) or t != original["tokens"][i]]
    assert page.locator("#heads-target mark").count() == len(changed)
    off = page.get_by_test_id("heads-contrib").evaluate("gd => gd.data[2].text")
    assert off[layer][head] == "off"
    page.get_by_test_id("heads-toggle").click()  # the enlarged head (layer 1, head 1) goes off too
    page.wait_for_function("document.getElementById('heads-contrib').dataset.off.split(';').length === 2")
    assert page.get_by_test_id("heads-toggle").get_attribute("aria-pressed") == "true"
    assert problems.errors == []


def test_the_heads_chapter_states_the_translation_heads_and_contributions(open_page, server):
    page, problems = open_page("?ch=heads")
    show(page, "heads-contrib")  # the view asks once its first figure is near, as a reader passes it
    ranking = show(page, "heads-ranking")  # in the fold below it
    answer = post(server, "/api/heads", {})
    scores = [r["score"] for r in answer["alignment"]["ranking"]]
    assert ranking.evaluate("gd => gd.data[0].x") == scores
    page.wait_for_function(
        "document.querySelector('#heads-more-story [data-fact=top]').textContent.includes('L')")
    top = answer["alignment"]["ranking"][0]
    assert facts(page, "heads-more-story")["top"].startswith(f"L{top['layer'] + 1} H{top['head'] + 1}")
    contrib = show(page, "heads-contrib")
    cross = [c for c in answer["contributions"] if c["kind"] == "cross"]
    z = contrib.evaluate("gd => gd.data[2].z")
    assert all(z[c["layer"]][c["head"]] == c["mean"] for c in cross)
    assert "align best" in page.locator("[data-recap='heads']").inner_text()
    assert problems.errors == []


def test_the_heads_chapter_rollout_hover_and_summed_selection(open_page, server):
    page, problems = open_page("?ch=heads")
    show(page, "head-detail")
    page.get_by_test_id("heads-more").locator("summary").click()  # the rollout is in the chapter's fold
    page.get_by_test_id("heads-rollout-toggle").check()
    page.wait_for_function("new URLSearchParams(location.search).get('rollout') === '1'")
    rollout = show(page, "heads-rollout")
    answer = post(server, "/api/heads", {})
    assert rollout.evaluate("gd => gd.data[0].z") == answer["rollout"][0]
    assert all(sum(row) == pytest.approx(1, abs=1e-3) for row in answer["rollout"][0])
    page.locator("#heads-source .token[data-index='1']").hover()
    page.wait_for_function("document.documentElement.dataset.headsHover === 'source.1'")
    assert page.locator("#heads-source .token--hover").get_attribute("data-index") == "1"
    shapes = page.get_by_test_id("head-detail").evaluate("gd => gd.layout.shapes.map(s => [s.x0, s.x1])")
    assert [0.5, 1.5] in shapes, "the cross map's column of the hovered source word is outlined"
    assert rollout.evaluate("gd => gd.layout.shapes.length") == 2, "its row and its column in the rollout"
    show(page, "head-detail")  # back on screen, for the pointer
    for row in (0, 1):  # a hover on a map (the first move binds it): its column's source word
        page.mouse.move(*cell(page, "head-detail", "", 2, row), steps=2)
    page.wait_for_function("document.documentElement.dataset.headsHover === 'source.2'")
    page.locator("#heads-source .token[data-index='0']").click()
    page.locator("#heads-source .token[data-index='2']").click()
    page.wait_for_function("new URLSearchParams(location.search).get('sel') === '0,2'")
    summed = show(page, "heads-summed")
    page.wait_for_function("document.getElementById('heads-summed').dataset.selected === '0,2'")
    attention = post(server, "/api/attention", {"model": answer["model"]})
    first = next(m for m in attention["maps"] if m["kind"] == "cross" and m["layer"] == 0 and m["head"] == 0)
    expected = [row[0] + row[2] for row in first["weights"]]
    assert summed.evaluate("gd => gd.data[0].y") == pytest.approx(expected)
    assert problems.errors == []


def test_the_heads_chapter_restores_heads_off_rollout_and_selection(open_page, server):
    page, problems = open_page("?ch=heads&off=cross.1.2&rollout=1&sel=1")
    assert in_view(page, "heads")
    contrib = show(page, "heads-contrib")
    assert contrib.evaluate("gd => gd.data[2].text[0][1]") == "off"
    assert page.get_by_test_id("heads-rollout-toggle").is_checked()
    show(page, "heads-rollout")
    page.wait_for_function("document.getElementById('heads-summed').dataset.selected === '1'")
    assert "token--selected" in page.locator("#heads-source .token[data-index='1']").get_attribute("class")
    assert page.get_by_test_id("heads-effect").get_attribute("data-delta") is not None
    assert problems.errors == []


def test_the_prediction_chapter_top_k_beam_and_a_forced_prefix(open_page, server, catalog):
    model = with_heads(catalog)["name"]
    page, problems = open_page("?ch=prediction")
    show(page, "predict-tree")
    greedy = post(server, "/api/predict", {"model": model, "top_k": 5, "beam_size": 1})
    table = page.get_by_test_id("predict-table")
    page.wait_for_function("n => document.getElementById('predict-table').dataset.steps === n",
                           arg=str(len(greedy["steps"])))
    first = table.locator("tr").first.locator("button")
    assert first.count() == len(greedy["steps"][0]["top"])
    said = facts(page, "predict-story")
    assert said["greedy"] == greedy["translation"]
    assert number(said["first-probability"]) == pytest.approx(greedy["steps"][0]["probability"], rel=0.06)
    beam = page.get_by_test_id("predict-beam")
    beam.focus()
    for _ in range(3):
        page.keyboard.press("ArrowRight")
    page.wait_for_function("new URLSearchParams(location.search).get('beam') === '4'")
    wide = post(server, "/api/predict", {"model": model, "top_k": 5, "beam_size": 4})
    nodes = sum(len(step) for step in wide["tree"])
    page.wait_for_function("n => document.getElementById('predict-tree').dataset.nodes === n", arg=str(nodes))
    assert page.get_by_test_id("predict-candidates").locator("li").count() == len(wide["candidates"])
    second = greedy["steps"][0]["top"][1]["token"]
    first.nth(1).click()
    page.wait_for_function("t => new URLSearchParams(location.search).get('prefix') === t", arg=second)
    forced = post(server, "/api/predict", {"model": model, "top_k": 5, "beam_size": 1, "prefix": [second]})
    page.wait_for_function("t => document.querySelector('#predict-story [data-fact=greedy]').textContent === t",
                           arg=forced["translation"])
    assert forced["target_tokens"][0] == second
    assert "forced" in table.locator("tr").first.inner_text()
    assert problems.errors == []


def test_the_prediction_chapter_restores_model_beam_and_prefix(open_page, server, catalog):
    model = with_heads(catalog)["name"]
    forced = post(server, "/api/predict", {"model": model, "beam_size": 1})["target_tokens"][:1]
    page, problems = open_page(f"?ch=prediction&pmodel={model}&beam=3&prefix={forced[0]}")
    assert in_view(page, "prediction")
    show(page, "predict-tree")
    wide = post(server, "/api/predict", {"model": model, "beam_size": 3, "prefix": forced})
    page.wait_for_function("n => document.getElementById('predict-tree').dataset.nodes === n",
                           arg=str(sum(len(step) for step in wide["tree"])))
    assert page.get_by_test_id("predict-beam").input_value() == "3"
    assert page.get_by_test_id("predict-model").input_value() == model
    assert "forced" in page.get_by_test_id("predict-table").locator("tr").first.inner_text()
    chapter_in_url(page, "prediction")
    assert problems.errors == []


def test_the_prediction_chapter_draws_one_label_per_position_with_the_api_losses(open_page, server):
    page, problems = open_page("?ch=prediction")
    answer = post(server, "/api/next-token", {})
    plot = show(page, "labels-plot")
    page.wait_for_function("n => document.getElementById('labels-plot').dataset.labels === n",
                           arg=str(len(answer["labels"])))
    assert plot.evaluate("gd => gd.data[0].y") == answer["losses"]
    said = facts(page, "labels-story")
    assert said["translation"] == answer["translation"] and said["count"] == str(len(answer["labels"]))
    assert number(said["mean"]) == pytest.approx(answer["mean_loss"], rel=0.06)
    assert problems.errors == []


def test_the_prediction_chapter_scores_a_typed_reference_beside_the_translation_and_says_a_refusal(open_page,
                                                                                                    server):
    page, problems = open_page("?ch=prediction")
    plot = show(page, "labels-plot")
    own = post(server, "/api/next-token", {})
    page.wait_for_function("n => document.getElementById('labels-plot').dataset.labels === n",
                           arg=str(len(own["labels"])))
    box, said = page.get_by_test_id("labels-reference"), page.get_by_test_id("labels-reference-status")
    where = "() => [scrollY, document.getElementById('labels-plot').getBoundingClientRect().top," \
            " document.getElementById('labels-reference-status').getBoundingClientRect().height]"
    before = page.evaluate(where)
    box.press_sequentially("I'm eating bread.", delay=30)
    reference = post(server, "/api/next-token", {"reference": "I'm eating bread."})
    page.wait_for_function("n => document.getElementById('labels-plot').dataset.reference === n",
                           arg=str(len(reference["labels"])))
    assert plot.evaluate("gd => gd.data[0].y") == own["losses"]
    assert plot.evaluate("gd => gd.data[1].y") == reference["losses"]
    assert said.get_attribute("data-state") == "scored"
    assert number(said.inner_text().split("mean loss ")[1].split(" ")[0]) == pytest.approx(
        reference["mean_loss"], rel=0.06)
    assert page.evaluate(where) == before, "typing a reference moved the page"
    page.wait_for_function("new URLSearchParams(location.search).get('ref') === \"I'm eating bread.\"")
    assert box.evaluate("el => el === document.activeElement"), "writing the URL took the box's focus"
    box.fill("bread " * 100)  # over the server's limit: refused in words, the model's own bars kept
    page.wait_for_function("document.getElementById('labels-reference-status').dataset.state === 'bad'")
    assert "reference" in said.inner_text() and "500" in said.inner_text()
    page.wait_for_function("document.getElementById('labels-plot').dataset.reference === ''")
    assert plot.evaluate("gd => gd.data.length") == 1 and plot.evaluate("gd => gd.data[0].y") == own["losses"]
    assert page.evaluate(where) == before
    refused = "Failed to load resource: the server responded with a status of 422 (Unprocessable Entity)"
    assert [e for e in problems.errors if e != refused] == []  # Chromium's own line for the refused request


def test_a_link_with_a_reference_opens_with_the_box_filled_and_its_bars_drawn(open_page, server):
    reference = post(server, "/api/next-token", {"reference": "I eat bread."})
    page, problems = open_page("?ch=prediction&ref=I+eat+bread.")
    plot = show(page, "labels-plot")
    assert page.get_by_test_id("labels-reference").input_value() == "I eat bread."
    page.wait_for_function("n => document.getElementById('labels-plot').dataset.reference === n",
                           arg=str(len(reference["labels"])))
    assert plot.evaluate("gd => gd.data[1].y") == reference["losses"]
    assert page.get_by_test_id("labels-reference-status").get_attribute("data-state") == "scored"
    assert problems.errors == []


def test_a_refused_reference_is_said_in_the_page_s_language(open_page, server):
    """The 422's `msg` is the server's English; the French page words the refusal from its catalogue,
    from the kind of problem the 422 names and its numbers."""
    page, problems = open_page("?lang=fr&ch=prediction&ref=" + "pain+" * 120)  # 600 characters
    show(page, "labels-plot")
    said = page.get_by_test_id("labels-reference-status")
    page.wait_for_function("document.getElementById('labels-reference-status').dataset.state === 'bad'")
    assert said.inner_text() == "Cette référence ne peut pas être notée\u00a0: elle dépasse 500 caractères."
    limit = httpx.get(f"{server}/api/health").json()["limits"]["max_target_tokens"]
    many = "a " * (limit + 10)
    refused = httpx.post(f"{server}/api/next-token", json={"text": SENTENCE, "reference": many}).json()
    pieces = refused["detail"][0]["ctx"]["actual_length"]
    page.get_by_test_id("labels-reference").fill(many)
    page.wait_for_function("n => document.getElementById('labels-reference-status').textContent.includes(n)",
                           arg=f"elle fait {pieces} jetons")
    assert said.inner_text().endswith(f"elle fait {pieces} jetons, et le modèle en écrit au plus {limit}.")
    assert "pieces" not in said.inner_text() and said.get_attribute("data-state") == "bad"
    refused_line = "Failed to load resource: the server responded with a status of 422 (Unprocessable Entity)"
    assert [e for e in problems.errors if e != refused_line] == []


def test_the_room_chapter_translates_with_each_sublayer_off_as_the_api_does(open_page, server, catalog):
    info = with_heads(catalog)
    page, problems = open_page("?ch=room")
    table = page.get_by_test_id("sublayers-table")
    table.scroll_into_view_if_needed()
    page.wait_for_function("document.querySelectorAll('#sublayers-table tr').length === 4")
    scores = {s["off"]: s for s in info.get("sublayers", [])}
    for off in (None, "feed_forward", "residual_attention", "residual_feed_forward"):
        answer = post(server, "/api/translate", {"model": info["name"], "sublayers_off": [off] if off else []})
        row = table.locator(f"tr[data-off={off or 'none'}]")
        page.wait_for_function("([sel, t]) => document.querySelector(sel + ' td').textContent === t",
                               arg=[f"#sublayers-table tr[data-off={off or 'none'}]", answer["translation"]])
        bleu = row.locator("td").nth(1).inner_text()
        if off in scores:
            assert number(bleu.split(" ")[0]) == pytest.approx(scores[off]["bleu"], rel=0.01)
        else:
            assert bleu == "–"
    # the shipped evaluation is the chapter's line in the recap, in every language
    recap = page.locator("[data-recap='room']").inner_text()
    assert info["name"] in recap and "BLEU" in recap
    assert problems.errors == []
