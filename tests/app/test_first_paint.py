"""The page as first painted: what a question hides on the first screen is already hidden when the
reader is asked first (a first visit, `?ask=1`, the cookie "ask"), and shown when they chose "Just
show me" (the cookie questions.js writes), so nothing moves as the page's script starts."""

from __future__ import annotations

import re

import pytest

REVEAL = re.compile(r'<div class="question-reveal" data-reveal="training"( hidden)?>')
CARD = re.compile(r'<div class="question" data-question="training" data-testid="question-training"( hidden)?>')


@pytest.mark.parametrize(("cookies", "query", "asking"), [
    ({}, "", True), ({"questions": "ask"}, "", True), ({"questions": "show"}, "", False),
    ({"questions": "show"}, "?ask=1", True), ({"questions": "nonsense"}, "", True),
])
def test_the_first_screen_question_is_written_as_it_will_be(client, cookies, query, asking):
    client.cookies.clear()
    for name, value in cookies.items():
        client.cookies.set(name, value)
    page = client.get(f"/{query}")
    client.cookies.clear()
    assert page.status_code == 200
    reveal, card = REVEAL.search(page.text), CARD.search(page.text)
    assert reveal and card
    assert bool(reveal.group(1)) is asking and bool(card.group(1)) is not asking
    assert "Vary" in page.headers and "Cookie" in page.headers["Vary"]


def test_an_embedded_figure_hides_nothing(client):
    page = client.get("/embed/curves-plot")
    assert page.status_code == 200
    assert REVEAL.search(page.text).group(1) is None and not CARD.search(page.text)


def test_the_header_s_controls_are_written_with_the_page(client):
    # the contrast switch beside the languages from the first paint: the header stays still as the script starts
    page = client.get("/?lang=fr").text
    tools = page[page.index('<div class="header-tools">'):]
    tools = tools[:tools.index('<nav class="site-nav"')]
    assert 'data-lang="fr"' in tools
    switch = re.search(r'<button [^>]*id="contrast-switch"[^>]*>([^<]+)</button>', tools)
    assert switch and "contrast" in switch.group(1).lower()
