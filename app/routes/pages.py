"""The page shell and the scripts it loads. Data never goes into the template: the page fetches
it from the JSON API, so user text is never interpreted as HTML or script here."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlencode

import plotly
from fastapi import APIRouter, HTTPException, Request
from fastapi.responses import FileResponse, HTMLResponse, RedirectResponse, Response
from fastapi.templating import Jinja2Templates
from jinja2 import pass_context
from starlette.concurrency import run_in_threadpool

from app import chapters
from app.config import REPO_ROOT
from app.guard import gzipped_once
from app.services import language

TEMPLATES = Jinja2Templates(directory=REPO_ROOT / "templates")
PLOTLY_JS = Path(plotly.__file__).resolve().parent / "package_data" / "plotly.min.js"
DATA_CREDIT = "Tatoeba (tatoeba.org) via manythings.org/anki, CC-BY 2.0 FR"
A_YEAR = "public, max-age=31536000, immutable"

router = APIRouter(include_in_schema=False)
QUESTIONS_COOKIE = "questions"  # "ask" or "show": the reader's choice (static/js/questions.js)

# The template's words: t (text, escaped) and th (the catalogue's own markup), in the language the
# route chose for this request (its context's `words`).
TEMPLATES.env.globals["t"] = pass_context(lambda context, key, **params: context["words"].text(key, **params))
TEMPLATES.env.globals["th"] = pass_context(lambda context, key, **params: context["words"].html(key, **params))
# The figures one may embed, as the chapters declare them (app/chapters.py); the template writes them
# on the page, where static/js/embed.js offers the same ones.
FIGURES = chapters.figures()


@router.get("/", response_class=HTMLResponse)
def index(request: Request, lang: str | None = None):
    return page(request, lang)


def page(request: Request, lang: str | None, **context) -> Response:
    """The template in the language chosen for this request (app/services/language.py); a link
    that names chapters by their old numbers goes to the same address with their slugs."""
    renamed = by_slug(request)
    if renamed is not None:
        return RedirectResponse(renamed, status_code=308)
    chosen = language.choose(lang, request.cookies.get(language.COOKIE), request.headers.get("accept-language"))
    # the reader's choice of questions (static/js/questions.js keeps it in a cookie too), so that the
    # first paint already hides what a question hides on the first screen: nothing moves as it starts
    asking = request.query_params.get("ask") == "1" or request.cookies.get(QUESTIONS_COOKIE) != "show"
    context |= {"data_credit": DATA_CREDIT, "words": language.Words(chosen), "lang": chosen,
                "languages": language.LANGUAGES, "base": str(request.base_url), "asking": asking,
                "figures": " ".join(sorted(FIGURES)), "chapters": chapters.CHAPTERS}
    response = TEMPLATES.TemplateResponse(request, "index.html", context)
    response.headers["Vary"] = "Accept-Language, Cookie"  # the same address answers in either language
    response.headers["Content-Language"] = chosen
    return response


def by_slug(request: Request) -> str | None:
    """The address with the chapters its `ch` and `tour` name by number (links made before the
    chapters had slugs) named by slug, the rest as it was; None when it names none so."""
    items = request.query_params.multi_items()
    renamed = [(key, ",".join(chapters.before_slugs(part) for part in value.split(","))
                if key in ("ch", "tour") else value) for key, value in items]
    if renamed == items:
        return None
    return f"{request.url.path}?{urlencode(renamed)}"  # relative: the scheme and host a proxy gave stay


@router.get("/embed/{figure}", response_class=HTMLResponse)
def embed(request: Request, figure: str, lang: str | None = None):
    """One figure of the page, for another site's <iframe>: the page's own template and code, showing
    only that figure (static/js/embed.js); the query string is the page's state (url-state.js)."""
    if figure not in FIGURES:
        raise HTTPException(404, f"no figure {figure[:64]!r}; the figures: {', '.join(sorted(FIGURES))}")
    return page(request, lang, embed=figure)


@router.get("/vendor/plotly.min.js")
async def plotly_js(request: Request) -> Response:
    """Plotly from the installed package (never copied into the repository). The file changes
    only with the package version, so browsers may keep it. It is nine tenths of the first load:
    compressed once, at gzip's hardest level (app/guard.py), for every reader that takes gzip."""
    headers = {"Cache-Control": A_YEAR, "Vary": "Accept-Encoding"}
    if "gzip" not in request.headers.get("accept-encoding", ""):
        return FileResponse(PLOTLY_JS, media_type="text/javascript", headers=headers)
    body = await run_in_threadpool(gzipped_once, PLOTLY_JS)
    return Response(body, media_type="text/javascript", headers={**headers, "Content-Encoding": "gzip"})
