"""The API docs in the browser, under their own Content-Security-Policy (enforced) and with every
request to another host refused: Swagger UI runs a request from "Try it out", ReDoc renders and
searches, and neither page tries to reach the network beyond this server."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import Problems

pytestmark = pytest.mark.browser

RECORD_VIOLATIONS = """
window.__cspViolations = [];
document.addEventListener('securitypolicyviolation', e => window.__cspViolations.push(
  `${e.violatedDirective} ${e.blockedURI} ${e.sourceFile}:${e.lineNumber}`));
"""
WAIT_MS = 30_000


@pytest.fixture
def offline_page(chromium, server):
    """(page, problems, elsewhere): a page in its own context where every request for anything but
    this server (blob: URLs the page makes included) is aborted and listed in `elsewhere`."""
    context = chromium.new_context(viewport={"width": 1280, "height": 900})
    elsewhere: list[str] = []

    def only_this_server(route):
        url = route.request.url
        if url.startswith((f"{server}/", f"blob:{server}/")):
            route.continue_()
        else:
            elsewhere.append(url)
            route.abort()

    context.route("**/*", only_this_server)
    context.add_init_script(RECORD_VIOLATIONS)
    page = context.new_page()
    page.set_default_timeout(WAIT_MS)
    yield page, Problems(page), elsewhere
    context.close()


def no_problems(page, problems: Problems, elsewhere: list[str]) -> None:
    assert elsewhere == [], elsewhere
    violations = page.evaluate("window.__cspViolations")
    assert violations == [], violations
    assert problems.errors == [], problems.errors


def test_swagger_ui_runs_a_request_offline(offline_page, server):
    page, problems, elsewhere = offline_page
    page.goto(f"{server}/docs")
    expect(page.locator(".swagger-ui .info .title")).to_contain_text("Attention Lab")
    path = page.locator(".opblock-summary-path[data-path='/api/translate']")
    operation = page.locator(".opblock-post", has=path)
    operation.locator(".opblock-summary").click()
    operation.get_by_role("button", name="Try it out").click()
    operation.locator("textarea.body-param__text").fill('{"text": "Je mange du pain.", "model": "transformer"}')
    operation.get_by_role("button", name="Execute").click()
    response = operation.locator(".live-responses-table .response")
    expect(response.locator(".response-col_status")).to_have_text("200")
    expect(response.locator(".microlight").first).to_contain_text('"translation"')
    no_problems(page, problems, elsewhere)


def test_redoc_renders_and_searches_offline(offline_page, server):
    page, problems, elsewhere = offline_page
    page.goto(f"{server}/redoc")
    expect(page.locator("h1").first).to_contain_text("Attention Lab")
    expect(page.get_by_text("/api/translate").first).to_be_attached()
    page.get_by_placeholder("Search...").fill("translate")  # the index lives in ReDoc's blob: worker
    expect(page.locator("[data-role='search:results'] li").first).to_contain_text("Translate")
    no_problems(page, problems, elsewhere)
