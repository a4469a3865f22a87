"""The training chapter's "teach it a pair": a reader types the English they want, guesses, teaches a
private copy of a tiny model a few steps, and the page shows the stream's own numbers (the loss line,
the layers' bars, the translation, the map, the BLEU and the example sentences before and after), the
guess's verdict from the run's first step that wrote the English, a refused field in the page's
language, and the settings kept in the URL."""

from __future__ import annotations

import json
import re

import httpx
import pytest

from models.teach_config import TEACHABLE

pytestmark = pytest.mark.browser

DONE = ("() => document.documentElement.dataset.teachRunning === ''"
        " && !!document.getElementById('teach-verdict').textContent")


def test_the_tiny_models_can_be_taught(server, catalog):
    info = httpx.get(f"{server}/api/teach").json()
    assert info["models"] == [m["name"] for m in catalog if m["name"] in TEACHABLE]
    assert "lstm-additive" in info["models"] and info["held_out"] > 0


def ready(page):
    start = page.get_by_test_id("teach-start")
    start.scroll_into_view_if_needed()
    page.wait_for_function("() => !document.getElementById('teach-start').disabled")
    return start


def taught(page, guess: str | None = None) -> list[dict]:
    """Press Teach (after a guess), wait for the run's end; the lines the server streamed to the page."""
    if guess:
        page.get_by_test_id(f"teach-guess-{guess}").check()
    with page.expect_response(lambda r: r.url.endswith("/api/teach") and r.request.method == "POST") as answer:
        page.get_by_test_id("teach-start").click()
    page.wait_for_function(DONE)
    return [json.loads(line) for line in answer.value.text().splitlines() if line.strip()]


def expected_verdict(learned_at: int | None, steps: int, guess: str) -> str:
    words = {"1": "1", "2-5": "2 to 5", "6-15": "6 to 15", "more": "more than 15, or never"}[guess]
    low, high = {"1": (1, 1), "2-5": (2, 5), "6-15": (6, 15), "more": (16, 10**9)}[guess]
    if learned_at is None:
        fact = f"did not write your English in {steps} step{'' if steps == 1 else 's'}."
        right = guess == "more"
        return f"You guessed {words}: right. It {fact}" if right else f"You guessed {words}; it {fact}"
    fact = f"first wrote your English after step {learned_at}."
    right = low <= learned_at <= high
    return f"You guessed {words}: right. It {fact}" if right else f"You guessed {words}; it {fact}"


def test_a_reader_teaches_a_pair_and_sees_the_stream_s_numbers(open_page):
    page, problems = open_page("?ch=training&teachsteps=3&rehearse=1")
    ready(page)
    target = page.get_by_test_id("teach-target")
    assert target.input_value() == "I'm eating bread."  # the example's English, for the example sentence
    assert page.get_by_test_id("teach-steps").input_value() == "3"  # the URL's
    assert page.get_by_test_id("teach-model").input_value() == "lstm-additive"  # the default
    assert page.get_by_test_id("teach-rehearsal").is_checked()
    assert page.get_by_test_id("teach-status").inner_text().startswith("Type the English you want")
    target.fill("The cat eats bread.")
    lines = taught(page, guess="2-5")
    start = next(line["start"] for line in lines if "start" in line)
    steps = [line for line in lines if "step" in line]
    end = next(line["end"] for line in lines if "end" in line)
    assert lines[-1]["done"] is True and "error" not in lines[-1]
    assert [s["step"] for s in steps] == [1, 2, 3]
    # the loss line and the rehearsal's are the stream's, step by step
    loss = page.get_by_test_id("teach-loss").evaluate("gd => gd.data.map(t => ({x: t.x, y: t.y}))")
    assert loss[0] == {"x": [1, 2, 3], "y": [s["loss"] for s in steps]}
    assert loss[1]["y"] == [s["rehearsal_loss"] for s in steps]
    # the bars: each layer's gradient and step size at the last step
    bars = page.get_by_test_id("teach-layers").evaluate("gd => gd.data.map(t => t.y)")
    layers = steps[-1]["layers"]
    assert bars == [[layer["gradient"] for layer in layers], [layer["moved"] for layer in layers]]
    # the translation shown is the last step's; the map is its map
    said = page.get_by_test_id("teach-translation").inner_text()
    last = steps[-1]["reading"]
    assert said.startswith("After step 3 it writes: “") and last["translation"] in said
    assert said.endswith("= your English") == steps[-1]["learned"]
    assert page.get_by_test_id("teach-map").evaluate("gd => gd.data[0].z") == last["map"]
    # what it cost: the BLEU before and after, and the examples before and after, as streamed
    bleu = page.get_by_test_id("teach-bleu").inner_text()
    assert bleu.startswith(f"Held-out BLEU on {start['before']['pairs']} test pairs: "), bleu
    assert f"{start['before']['bleu']:.1f} before, {end['after']['bleu']:.1f} after" in bleu
    table = page.get_by_test_id("teach-examples").evaluate(
        "t => [...t.querySelectorAll('tbody tr')].map(r => [...r.children].map(c => c.textContent))")
    assert table == [[e["source"], e["reference"], b, a] for e, b, a in
                     zip(start["examples"], start["before"]["examples"], end["after"]["examples"], strict=True)]
    # the guess's verdict, from the run's own first step that wrote the English
    assert page.get_by_test_id("teach-verdict").inner_text() == expected_verdict(end["learned_at"], 3, "2-5")
    assert page.get_by_test_id("teach-status").inner_text().startswith("Done: 3 steps on lstm-additive")
    # each figure's sentence says what it draws
    sentence = page.evaluate("() => document.getElementById(document.getElementById('teach-loss')"
                             ".getAttribute('aria-describedby')).textContent")
    assert sentence.startswith("The loss on your pair went from ") and "at step 3" in sentence
    # the settings are in the URL, and a reload restores them
    assert "target=The+cat+eats+bread." in page.url and "teachsteps=3" in page.url and "rehearse=1" in page.url
    page.reload()
    page.wait_for_function("window.attentionLab && window.attentionLab.lastUpdate !== null")
    ready(page)
    assert page.get_by_test_id("teach-target").input_value() == "The cat eats bread."
    assert page.get_by_test_id("teach-steps").input_value() == "3"
    assert page.get_by_test_id("teach-rehearsal").is_checked()
    assert problems.errors == [] and problems.dialogs == []


def test_another_sentence_gets_no_example_and_a_model_without_attention_says_so(open_page):
    page, problems = open_page("?ch=training&text=Le+chat+dort.&teachmodel=lstm&teachsteps=1")
    ready(page)
    assert page.get_by_test_id("teach-target").input_value() == ""  # no English offered for another sentence
    source = page.get_by_test_id("teach-source").inner_text()
    assert source == "Your French (the sentence at the top): “Le chat dort.”"
    page.get_by_test_id("teach-target").fill("The cat sleeps.")
    lines = taught(page, guess="more")
    end = next(line["end"] for line in lines if "end" in line)
    assert page.get_by_test_id("teach-map").inner_text().startswith("lstm passes the sentence on as one vector")
    assert page.get_by_test_id("teach-verdict").inner_text() == expected_verdict(end["learned_at"], 1, "more")
    assert problems.errors == []


@pytest.mark.parametrize(("lang", "empty", "steps"), [
    ("en", "Type the English you want the model to write, then press Teach.",
     "Steps must be a whole number from 1 to 100."),
    ("fr", "Tapez l’anglais que le modèle doit écrire, puis appuyez sur Apprendre.",
     "Le nombre de pas doit être un entier de 1 à 100."),
])
def test_a_refused_field_is_said_in_the_page_s_language(open_page, lang, empty, steps):
    page, problems = open_page(f"?ch=training&lang={lang}&teachsteps=500")  # out of bounds: the default
    ready(page)
    assert page.get_by_test_id("teach-steps").input_value() == "30"
    page.get_by_test_id("teach-target").fill("")
    page.get_by_test_id("teach-start").click()
    status = page.get_by_test_id("teach-status")
    page.wait_for_function("t => document.getElementById('teach-status').textContent === t", arg=empty)
    page.get_by_test_id("teach-target").fill("I eat bread.")
    page.get_by_test_id("teach-steps").fill("500")
    page.get_by_test_id("teach-steps").dispatch_event("change")
    page.get_by_test_id("teach-start").click()
    page.wait_for_function("t => document.getElementById('teach-status').textContent === t", arg=steps)
    assert status.get_attribute("role") == "status"
    assert not re.search(r"422|body\.", status.inner_text())
    assert page.get_by_test_id("teach-start").is_enabled()
    # the browser logs each refused request; nothing else went wrong
    assert all("422" in error for error in problems.errors), problems.errors
