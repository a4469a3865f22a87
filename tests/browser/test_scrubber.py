"""Watching attention being learned (the attention and heads chapters): the step slider replays the typed
sentence's cross-attention at each stored point of a model's training, its facts measured, the
step in the URL; a chapter whose models have no snapshots says so."""

from __future__ import annotations

import pytest

from tests.browser.conftest import UPDATE_TIMEOUT_MS, show

pytestmark = pytest.mark.browser


def replayed(catalog, candidates) -> dict | None:
    return next((m for m in catalog if candidates(m) and len(m["snapshots"]) > 1), None)


def chapters(catalog) -> list[tuple[str, str, dict]]:
    """(scrubber container, URL key, model) of the two chapters, from the catalogue."""
    aligning = replayed(catalog, lambda m: m["recurrent"] and m["cross_attention"])
    heads = replayed(catalog, lambda m: "encoder" in m["attention_kinds"])
    return [("alignment-scrubber", "astep", aligning), ("heads-scrubber", "hstep", heads)]


def drawn_step(page, name: str) -> str:
    return page.get_by_test_id(f"scrub-map-{name}").evaluate("el => el.dataset.step")


def weights(page, name: str):
    return page.get_by_test_id(f"scrub-map-{name}").evaluate("el => JSON.stringify(el.data[0].z)")


def wait_for_step(page, name: str, step: int) -> None:
    page.wait_for_function(
        "([id, step]) => document.querySelector(`[data-testid='${id}']`).dataset.step === step",
        arg=[f"scrub-map-{name}", str(step)], timeout=UPDATE_TIMEOUT_MS)


@pytest.mark.parametrize("chapter", [0, 1])
def test_dragging_the_step_replays_training_on_the_typed_sentence(open_page, catalog, chapter):
    container, key, model = chapters(catalog)[chapter]
    assert model, "the tiny models of tests/tiny.py give both chapters snapshots"
    name, timeline = model["name"], model["snapshots"]
    page, problems = open_page()
    show(page, f"scrub-map-{name}")
    wait_for_step(page, name, timeline[-1]["step"])  # the shipped weights first
    slider = page.get_by_test_id(f"scrub-{name}")
    seen = {timeline[-1]["step"]: weights(page, name)}
    for index in range(len(timeline) - 1):
        slider.focus()
        slider.press("Home")
        for _ in range(index):
            slider.press("ArrowRight")
        wait_for_step(page, name, timeline[index]["step"])
        seen[timeline[index]["step"]] = weights(page, name)
        story = page.get_by_test_id(f"scrub-story-{name}").inner_text()
        assert f"Step {timeline[index]['step']} of {timeline[-1]['step']}" in story
        assert f"validation BLEU {timeline[index]['valid_bleu']:.1f}" in story
        assert "largest weight averages" in story
        assert page.evaluate("key => new URLSearchParams(location.search).get(key)", key) == \
            str(timeline[index]["step"])
    assert len(set(seen.values())) == len(timeline), "each step draws its own map"
    assert problems.errors == []


def test_a_shared_url_opens_the_step_it_names(open_page, catalog):
    _, key, model = chapters(catalog)[1]
    step = model["snapshots"][1]["step"]
    page, problems = open_page(f"?{key}={step}")
    show(page, f"scrub-map-{model['name']}")
    wait_for_step(page, model["name"], step)
    assert page.get_by_test_id(f"scrub-{model['name']}").input_value() == "1"
    assert problems.errors == []


def test_play_walks_to_the_shipped_weights(open_page, catalog):
    _, key, model = chapters(catalog)[1]
    name, timeline = model["name"], model["snapshots"]
    page, problems = open_page(f"?{key}=0")
    show(page, f"scrub-map-{name}")
    wait_for_step(page, name, 0)
    page.get_by_test_id(f"scrub-play-{name}").click()
    wait_for_step(page, name, timeline[-1]["step"])
    page.wait_for_function("id => document.querySelector(`[data-testid='${id}']`).textContent.includes('Play')",
                           arg=f"scrub-play-{name}")
    assert problems.errors == []
