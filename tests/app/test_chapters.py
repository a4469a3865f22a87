"""app/chapters.py, the chapters' one declaration: what it names exists, and what reads it agrees."""

from __future__ import annotations

from app import chapters
from app.main import create_app
from app.services import ahead


def test_every_declared_route_is_served_with_its_method():
    paths = create_app().openapi()["paths"]
    for route in chapters.routes():
        assert ("get" if route.get else "post") in paths.get(route.path, {}), route.path


def test_every_first_visit_request_is_a_declared_route():
    assert set(ahead.page_requests()) <= {route.path for route in chapters.routes()}


def test_the_chapters_are_numbered_in_order_with_one_key_each():
    assert [c.number for c in chapters.CHAPTERS] == list(range(1, len(chapters.CHAPTERS) + 1))
    assert all(c.question in (None, "sentence", "fixed", "later") for c in chapters.CHAPTERS)
    every = [f for c in chapters.CHAPTERS for f in c.figures]
    assert len(every) == len(set(every)), "a figure belongs to one chapter"
