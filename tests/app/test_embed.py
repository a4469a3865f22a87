"""/embed/<figure>: one figure of the page for another site's <iframe>. Only that route may be framed;
an unknown figure is a 404 that says which figures there are, never a 500."""

from __future__ import annotations

import re

import pytest

from app.chapters import CHAPTERS
from app.config import REPO_ROOT
from app.routes.pages import FIGURES

TEMPLATES = REPO_ROOT / "templates" / "chapters"


def test_every_chapter_declares_the_figures_its_section_holds():
    for chapter in CHAPTERS:
        # every plot its template names by id, and every pair of panels a view fills per model
        template = (TEMPLATES / f"{chapter.slug}.html").read_text(encoding="utf-8")
        held = re.findall(r'<div class="(?:plot|pair)\b[^"]*" id="([^"]+)"', template)
        assert list(chapter.figures) == held, chapter.slug
    # a chapter with no plot to embed shows its evidence as a table or a list (the room chapter's
    # translations and scores, the recap's rows)
    for chapter in (c for c in CHAPTERS if not c.figures):
        assert re.search(r"<(table|ol|ul)\b", (TEMPLATES / f"{chapter.slug}.html").read_text()), chapter.slug
    assert {"curves-plot", "recurrence-plot", "grad-plot", "order-maps", "predict-tree"} <= FIGURES


def test_the_page_writes_every_chapter_in_the_story_order(client):
    written = re.findall(r'<section id="([^"]+)" class="chapter" data-chapter="([^"]+)"', client.get("/").text)
    assert written == [(c.slug, c.slug) for c in CHAPTERS]


def test_the_page_writes_one_embed_button_per_figure_and_an_embedded_figure_none(client):
    # written with the page, so that no caption grows when the code arrives (a shift below the fold)
    offered = re.findall(r'<button [^>]*data-embed-for="([^"]+)"', client.get("/").text)
    assert sorted(offered) == sorted(FIGURES)
    assert "data-embed-for" not in client.get("/embed/curves-plot").text


@pytest.mark.parametrize("figure", ["curves-plot", "recurrence-change", "heads-grid"])
def test_a_figure_is_served_to_be_framed_by_any_site(client, figure):
    answer = client.get(f"/embed/{figure}", params={"text": "Je mange du pain.", "ch": "recurrence"})
    assert answer.status_code == 200 and answer.headers["content-type"].startswith("text/html")
    policy = answer.headers["content-security-policy"]
    assert "frame-ancestors *" in policy and "'none'" not in policy.split("frame-ancestors")[1]
    assert "default-src 'self'" in policy and "script-src 'self'" in policy  # the rest as strict as the page's
    assert "x-frame-options" not in answer.headers
    assert f' data-embed="{figure}">' in answer.text


@pytest.mark.parametrize("path", ["/", "/docs", "/api/health", "/static/js/main.js", "/embed"])
def test_everything_else_refuses_to_be_framed(client, path):
    headers = client.get(path).headers
    assert "frame-ancestors 'none'" in headers["content-security-policy"]
    assert headers["x-frame-options"] == "DENY"


@pytest.mark.parametrize("figure", ["no-such-figure", "source", "<img src=x onerror=alert(1)>", "x" * 300,
                                    "curves-plot.js"])
def test_an_unknown_figure_is_404_naming_the_figures(client, figure):
    answer = client.get(f"/embed/{figure}")
    assert answer.status_code == 404
    detail = answer.json()["detail"]
    assert "curves-plot" in detail and len(detail) < 2000
    assert "frame-ancestors *" in answer.headers["content-security-policy"]  # shown inside a frame too


def test_the_page_itself_is_not_an_embed(client):
    assert "data-embed=" not in client.get("/").text
