"""app/chapters.py, the chapters' one declaration: what it names exists, and what reads it agrees."""

from __future__ import annotations

import re

from app import chapters
from app.config import REPO_ROOT
from app.main import create_app
from app.services import ahead, recap


def test_every_declared_route_is_served_with_its_method():
    paths = create_app().openapi()["paths"]
    for route in chapters.routes():
        assert ("get" if route.get else "post") in paths.get(route.path, {}), route.path


def test_every_first_visit_request_is_a_declared_route():
    assert set(ahead.page_requests()) <= {route.path for route in chapters.routes()}


def test_a_chapter_is_named_by_a_slug_and_numbered_by_its_place():
    slugs = [c.slug for c in chapters.CHAPTERS]
    assert len(slugs) == len(set(slugs)) and all(re.fullmatch(r"[a-z]+", slug) for slug in slugs)
    assert [c.number for c in chapters.CHAPTERS] == list(range(1, len(slugs) + 1))
    assert all(c.question in (None, "sentence", "fixed", "later") for c in chapters.CHAPTERS)
    every = [f for c in chapters.CHAPTERS for f in c.figures]
    assert len(every) == len(set(every)), "a figure belongs to one chapter"


def test_every_chapter_has_its_template_and_every_template_a_chapter():
    held = sorted(path.stem for path in (REPO_ROOT / "templates" / "chapters").glob("*.html"))
    assert held == sorted(c.slug for c in chapters.CHAPTERS)


def test_every_view_module_is_one_chapter_s():
    """The page loads the views the records name (static/js/contents.js): a module no record names
    would never run."""
    named = [view for c in chapters.CHAPTERS for view in c.views]
    held = [path.stem for path in (REPO_ROOT / "static" / "js" / "chapters").glob("*.js")]
    assert sorted(named) == sorted(held) and len(named) == len(set(named))


def test_an_old_numbered_link_names_the_chapter_it_meant():
    """Links made when chapters had numbers keep their meaning: each number names a chapter that still
    is, each chapter once."""
    assert set(chapters.BEFORE_SLUGS) <= set(chapters.slugs())
    assert len(chapters.BEFORE_SLUGS) == len(set(chapters.BEFORE_SLUGS))
    assert [chapters.before_slugs(str(n)) for n in range(1, len(chapters.BEFORE_SLUGS) + 1)] == \
        list(chapters.BEFORE_SLUGS)
    assert [chapters.before_slugs(v) for v in ("0", "99", "heads", "")] == ["0", "99", "heads", ""]


def test_the_recap_measures_parts_of_the_chapters_rows():
    parts = {(c.slug, part) for c in chapters.CHAPTERS for part in c.recap}
    assert set(recap.MEASURES) <= parts


def test_a_link_by_old_numbers_goes_to_the_same_address_by_slug(client):
    answer = client.get("/?lang=fr&ch=10&tour=3,5,99&text=Je+mange", follow_redirects=False)
    assert answer.status_code == 308
    assert answer.headers["location"] == "/?lang=fr&ch=prediction&tour=gradients%2Cattention%2C99&text=Je+mange"
    embedded = client.get("/embed/curves-plot?ch=1", follow_redirects=False)
    assert (embedded.status_code, embedded.headers["location"]) == (308, "/embed/curves-plot?ch=training")
    assert client.get("/?ch=heads&tour=heads,order", follow_redirects=False).status_code == 200
    for number, slug in enumerate(chapters.BEFORE_SLUGS, start=1):  # every number a link may hold
        answer = client.get(f"/?ch={number}", follow_redirects=False)
        assert (answer.status_code, answer.headers["location"]) == (308, f"/?ch={slug}")
