"""docs/API.md, the contract for clients, against the schema the server serves: every endpoint of
/openapi.json has a section headed "### `METHOD /path`", and every such heading is an endpoint."""

from __future__ import annotations

import re

from app.config import REPO_ROOT

API_DOC = REPO_ROOT / "docs" / "API.md"
HEADING = re.compile(r"^### `([A-Z]+) (/\S*)`$", re.MULTILINE)
METHODS = {"get", "post", "put", "patch", "delete"}  # HEAD and OPTIONS are never in our schema


def documented() -> list[tuple[str, str]]:
    return HEADING.findall(API_DOC.read_text(encoding="utf-8"))


def served(schema: dict) -> set[tuple[str, str]]:
    return {(method.upper(), path) for path, operations in schema["paths"].items()
            for method in operations if method in METHODS}


def test_the_headings_are_read():
    headings = documented()
    assert ("POST", "/api/translate") in headings and ("GET", "/api/models/{name}/curve") in headings


def test_every_endpoint_is_documented_once_and_nothing_else(client):
    headings = documented()
    assert len(headings) == len(set(headings)), "an endpoint documented twice"
    schema = served(client.get("/openapi.json").json())
    undocumented, unknown = schema - set(headings), set(headings) - schema
    assert not undocumented, f"endpoints missing from docs/API.md: {sorted(undocumented)}"
    assert not unknown, f"docs/API.md documents endpoints the server does not have: {sorted(unknown)}"


def test_no_file_sends_the_reader_outside_the_repository():
    for doc in [REPO_ROOT / "README.md", *sorted((REPO_ROOT / "docs").glob("*.md"))]:
        assert "../shared/docs" not in doc.read_text(encoding="utf-8"), doc.name
