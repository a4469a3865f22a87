"""The page under its Content-Security-Policy, enforced (the other browser tests bypass it): every
chart draws, figures download, and the browser reports no violation."""

from __future__ import annotations

import time

import httpx
import pytest

from bench.serving import JUST_SHOW_ME
from tests.browser.conftest import Problems

pytestmark = pytest.mark.browser

RECORD_VIOLATIONS = """
window.__cspViolations = [];
document.addEventListener('securitypolicyviolation', e => window.__cspViolations.push(
  `${e.violatedDirective} ${e.blockedURI} ${e.sourceFile}:${e.lineNumber}`));
"""


def wait_until(page, expression: str, arg=None, timeout: float = 20) -> None:
    """Playwright's wait_for_function evaluates a string in the page, which the policy forbids
    (and reports as a violation): poll with evaluate instead (a DevTools call, outside the policy)."""
    deadline = time.monotonic() + timeout
    while not page.evaluate(expression, arg):
        assert time.monotonic() < deadline, f"timed out waiting for {expression}"
        time.sleep(0.05)


def load(page, url: str) -> None:
    page.goto(url)
    wait_until(page, "() => !!(window.attentionLab && window.attentionLab.lastUpdate !== null)")


def draw_every_plot(page) -> int:
    testids = page.locator(".plot").evaluate_all("els => els.map(e => e.dataset.testid)")
    for testid in testids:
        # a plot in a fold: the fold opened first, as a reader does
        page.locator(f"[data-testid='{testid}']").evaluate(
            "el => { el.closest('details')?.setAttribute('open', '');"
            " el.scrollIntoView({block: 'center', behavior: 'instant'}); }")
        wait_until(page, "id => { const el = document.querySelector(`[data-testid='${id}']`);"
                         " return !!(!el.dataset.stale && (el.querySelector('.main-svg')"
                         " || el.querySelector('.plot-empty'))); }", testid)
    return len(testids)


@pytest.fixture
def strict_page(chromium, server):
    context = chromium.new_context(viewport={"width": 1280, "height": 900}, accept_downloads=True)
    context.add_init_script(RECORD_VIOLATIONS)
    context.add_init_script(JUST_SHOW_ME)
    page = context.new_page()
    problems = Problems(page)
    yield page, problems
    context.close()


def test_the_page_sends_the_policy(server):
    headers = httpx.get(f"{server}/").headers
    policy = headers["content-security-policy"]
    assert "default-src 'self'" in policy and "unsafe-eval" not in policy and "frame-ancestors 'none'" in policy
    assert headers["x-content-type-options"] == "nosniff"


def test_every_chart_draws_under_the_policy_with_no_violation(strict_page, server, catalog):
    page, problems = strict_page
    load(page, f"{server}/")
    assert draw_every_plot(page) > 0
    assert page.locator(".plot .main-svg").count() > 0
    for chapter in page.locator("nav a[href*='ch=']").evaluate_all("els => els.map(e => e.href)"):
        load(page, chapter)
        draw_every_plot(page)
    load(page, f"{server}/")
    draw_every_plot(page)
    plot = page.locator(".plot:has(.main-svg)").first
    plot.scroll_into_view_if_needed()
    plot.hover()
    with page.expect_download() as download:
        plot.locator('.modebar-btn[data-title="Download plot as PNG"]').click()
    assert download.value.suggested_filename.endswith(".png")
    violations = page.evaluate("window.__cspViolations")
    assert violations == [], violations
    assert problems.errors == [], problems.errors  # no CSP error, and no 422 for an undeclared field
