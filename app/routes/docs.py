"""The API's interactive docs, offline: /docs (Swagger UI) and /redoc (ReDoc), from the files the
installed fastapi-offline package ships (never copied into the repository, never a CDN), mounted
at ASSETS_URL by app/main.py. The pages have no inline script (app/guard.py's DOCS_CSP): our
static/js/docs.js starts either viewer, reading the schema's URL from the page."""

from __future__ import annotations

from pathlib import Path

import fastapi_offline
from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse

from app.routes.pages import TEMPLATES

ASSETS = Path(fastapi_offline.__file__).resolve().parent / "static"  # Swagger UI's and ReDoc's files
ASSETS_URL = "/docs-assets"

router = APIRouter(include_in_schema=False)


# What differs between the two pages (templates/api-docs.html): the viewer's files and its element
VIEWERS = {
    "swagger": {"title": "API docs (Swagger UI)", "element": "swagger-ui", "script": "swagger-ui-bundle.js",
                "stylesheet": "swagger-ui.css",
                "description": "The Attention Lab JSON API, interactive: try any endpoint from the browser."},
    "redoc": {"title": "API reference (ReDoc)", "element": "redoc", "script": "redoc.standalone.js",
              "stylesheet": None,
              "description": "The Attention Lab JSON API: every endpoint, its request and its answers."},
}


def _page(request: Request, viewer: str) -> HTMLResponse:
    context = {"title": request.app.title, "openapi_url": request.app.openapi_url, "assets": ASSETS_URL,
               "viewer": VIEWERS[viewer]}
    return TEMPLATES.TemplateResponse(request, "api-docs.html", context)


@router.get("/docs", response_class=HTMLResponse)
def swagger_ui(request: Request):
    return _page(request, "swagger")


@router.get("/redoc", response_class=HTMLResponse)
def redoc(request: Request):
    return _page(request, "redoc")
