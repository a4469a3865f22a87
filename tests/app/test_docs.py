"""/docs (Swagger UI) and /redoc (ReDoc): on by default, offline (their files from the installed
fastapi-offline package, at /docs-assets), and all gone with ATTENTION_LAB_DOCS=false."""

from __future__ import annotations

import re

import pytest
from fastapi.testclient import TestClient

from app.main import create_app
from tests.app.conftest import tiny_settings

PAGES = ("/docs", "/redoc")
ASSETS = {"/docs-assets/swagger-ui-bundle.js": "javascript", "/docs-assets/swagger-ui.css": "text/css",
          "/docs-assets/redoc.standalone.js": "javascript", "/docs-assets/favicon.png": "image/png",
          "/static/js/docs.js": "javascript"}
REFERENCE = re.compile(r"<(?:script|link)\b[^>]*?\b(?:src|href)=\"([^\"]*)\"")


@pytest.fixture(scope="module")
def docs_client(tiny_checkpoints):
    with TestClient(create_app(tiny_settings(tiny_checkpoints, models=("rnn",)))) as client:
        yield client


def test_docs_are_on_by_default_and_load_only_this_server(docs_client):
    for path, viewer in (("/docs", "swagger-ui-bundle.js"), ("/redoc", "redoc.standalone.js")):
        answer = docs_client.get(path)
        assert answer.status_code == 200 and answer.headers["content-type"].startswith("text/html")
        references = REFERENCE.findall(answer.text)
        assert f"/docs-assets/{viewer}" in references and "/static/js/docs.js" in references
        assert all(ref.startswith("/") and not ref.startswith("//") for ref in references), references
        assert "http" not in " ".join(references) and "cdn" not in answer.text
        assert re.search(r"<script\b(?![^>]*\bsrc=)", answer.text) is None  # no inline script
        assert 'data-openapi-url="/openapi.json"' in answer.text


def test_the_viewers_files_are_served(docs_client):
    for path, kind in ASSETS.items():
        answer = docs_client.get(path)
        assert answer.status_code == 200 and kind in answer.headers["content-type"], path
        assert len(answer.content) > 1000, path


def test_the_schema_the_docs_read_is_there(docs_client):
    schema = docs_client.get("/openapi.json").json()
    assert schema["info"]["title"] == "Attention Lab" and "/api/translate" in schema["paths"]
    assert not any(path in schema["paths"] for path in PAGES)  # the pages are not API


def test_docs_false_switches_pages_and_files_off(tiny_checkpoints):
    with TestClient(create_app(tiny_settings(tiny_checkpoints, models=("rnn",), docs=False))) as client:
        for path in (*PAGES, *(p for p in ASSETS if p.startswith("/docs-assets/"))):
            assert client.get(path).status_code == 404, path
        assert client.get("/openapi.json").status_code == 200
