"""Browser tests: Playwright for Python drives Debian's chromium against a real uvicorn.

The server (bench/serving.py) runs `app.main:app` on a free port, reading a session-scoped folder
of tiny, untrained checkpoints (tests/tiny.py): the five models of the story and a sixth,
"lstm-wide", that no code names, so every test also shows that a new checkpoint folder is enough
for a model to appear on the page.
"""

from __future__ import annotations

import os
import shutil
import uuid
from pathlib import Path

import httpx
import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeout

from bench.serving import CHROMIUM, CHROMIUM_ARGS, JUST_SHOW_ME, serve
from models.architectures import MODEL_NAMES
from models.config import Seq2SeqConfig
from models.tokenizer import BPETokenizer
from tests.tiny import ROOT, TOKENIZER, tiny_config, write_tiny_checkpoints

APP = os.environ.get("ATTENTION_LAB_BROWSER_APP", "app.main:app")  # point the tests at another server
EXTRA_MODEL = "lstm-wide"
# a model's size as the page writes it in a summary: [lang, parameters] -> "1.2M", « 1,2 M »
COMPACT = "([lang, n]) => new Intl.NumberFormat(lang, {notation: 'compact', maximumSignificantDigits: 3})" \
    ".format(n)"
# Random models never stop on their own: a short target table keeps each answer quick and small.
# The Transformer's also bounds its positional table, so it gets room for the longest input typed.
MAX_TARGET, MAX_TRANSFORMER = 24, 160
LONG_LAG = ROOT / "checkpoints" / "long-lag"
LIVE = ROOT / "checkpoints" / "live"


@pytest.fixture(scope="session")
def tiny_checkpoints(tmp_path_factory) -> Path:
    vocab_size = BPETokenizer.load(TOKENIZER).vocab_size
    recurrent = tuple(name for name in MODEL_NAMES if name != "transformer")
    extra = {
        "transformer": tiny_config("transformer", vocab_size, layers=3, max_len=MAX_TRANSFORMER),
        EXTRA_MODEL: Seq2SeqConfig(vocab_size=vocab_size, cell="lstm", attention="additive", d_embed=16,
                                   d_hidden=48, d_attn=16, max_len=MAX_TARGET),
    }
    folder = tmp_path_factory.mktemp("checkpoints")
    write_tiny_checkpoints(folder, recurrent, extra, max_len=MAX_TARGET)
    shutil.copytree(LONG_LAG, folder / LONG_LAG.name)  # the long-lag experiment's own tiny checkpoints
    shutil.copytree(LIVE, folder / LIVE.name)  # the live experiment's reference sweep
    return folder


@pytest.fixture(scope="session")
def chromium():
    if not Path(CHROMIUM).exists():
        pytest.skip(f"{CHROMIUM} is missing (apt-get install -y chromium); .ci/run installs it")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


@pytest.fixture(scope="session")
def server_log(tmp_path_factory) -> Path:
    """The file the browser tests' server writes its log to, at info: one line per request."""
    return tmp_path_factory.mktemp("server") / "uvicorn.log"


@pytest.fixture(scope="session")
def server(chromium, tiny_checkpoints, server_log) -> str:
    """Base URL of a uvicorn serving the app on the tiny models; stopped at the end of the session."""
    # no shares: every test's reader asks from the one address, many times the budgets of one visit.
    # Admission by queue age is tested in tests/app/test_admission.py; here its 0.5 s bound would turn
    # away the one reader's own burst of asks (a jump to the heads chapter) whenever the machine is busy with
    # other work, and the browser logs each 503 as a console error the tests count.
    # One stepper process, not one per core: the page's compares take the processes' path all the same,
    # and each test process (pytest-xdist) starts a server of its own, whose processes load the models.
    env = {"ATTENTION_LAB_CHECKPOINTS": str(tiny_checkpoints), "ATTENTION_LAB_DEVICE": "cpu",
           "ATTENTION_LAB_SHARES": "false", "ATTENTION_LAB_MAX_WAIT": "10", "ATTENTION_LAB_STEP_PROCESSES": "1"}
    with server_log.open("w+") as log, serve(env, APP, timeout=60, log_level="info", log=log) as url:
        yield url


@pytest.fixture(scope="session")
def health(server) -> dict:
    return httpx.get(f"{server}/api/health").json()


@pytest.fixture(scope="session")
def catalog(server) -> list[dict]:
    """GET /api/models: what the page builds itself from."""
    return httpx.get(f"{server}/api/models").json()


class Problems:
    """Console errors, uncaught exceptions and dialogs seen by a page."""

    def __init__(self, page):
        self.errors: list[str] = []
        self.dialogs: list[str] = []
        page.on("console", lambda m: m.type == "error" and self.errors.append(m.text))
        page.on("pageerror", lambda e: self.errors.append(f"uncaught: {e}"))

        def on_dialog(dialog):
            self.dialogs.append(dialog.message)
            dialog.dismiss()

        page.on("dialog", on_dialog)

    def clear(self) -> None:
        self.errors.clear()
        self.dialogs.clear()


# How long a view may take to show a new text or to draw. Generous: with another program holding one
# of the 2 cores, test_page.py overran 15 s in 1 of 2 runs (before and after the model threads were
# given a higher nice value), while a quiet machine needs well under 2 s. It is also the page's default
# for every wait and action that names none (Playwright's own is 30 s, the first update's was 20 s):
# under the same load, one of four runs of test_page.py failed on one of those.
UPDATE_TIMEOUT_MS = 45_000


@pytest.fixture(scope="session")
def browser_page(chromium, server):
    """One page for the whole session, loaded afresh by each test (`open_page`): a new page would
    start a new renderer, and its context's compiled-code cache makes reloading plotly.js cheap.
    Its reader chose "Just show me": the chapters' figures show at once (test_questions.py asks)."""
    context, page = shown(chromium, server)
    yield page, Problems(page)
    context.close()


def shown(chromium, server: str):
    """(context, page): a browser context of its own at 1280x900 whose reader chose "Just show me",
    in the browser and in the cookie that choice leaves (so that the server writes even the first
    page as shown)."""
    context = chromium.new_context(viewport={"width": 1280, "height": 900}, bypass_csp=True)
    context.add_init_script(JUST_SHOW_ME)
    context.add_cookies([{"name": "questions", "value": "show", "url": server}])
    page = context.new_page()
    page.set_default_timeout(UPDATE_TIMEOUT_MS)
    return context, page


@pytest.fixture
def open_page(browser_page, server):
    """open_page(query="", width=1280, routes=None) -> (page, problems): the session's page with no
    routes but `routes` (pattern -> Playwright handler), loaded at `/{query}` and its first update
    done, its problems cleared. Every test starts from
    a page loaded this way, whatever the tests before it did."""
    page, problems = browser_page

    def _open(query: str = "", width: int = 1280, height: int = 900, routes: dict | None = None):
        page.unroute_all(behavior="ignoreErrors")
        for pattern, handler in (routes or {}).items():  # in place before the page asks anything
            page.route(pattern, handler)
        page.set_viewport_size({"width": width, "height": height})
        problems.clear()
        page.goto(f"{server}/{query}")
        page.wait_for_function("window.attentionLab && window.attentionLab.lastUpdate !== null")
        return page, problems

    yield _open
    page.unroute_all(behavior="ignoreErrors")


@pytest.fixture
def fresh_page(open_page):
    """(page, problems): the page at `/` with the default sentence, every view shown for it."""
    return open_page()


def painted(page, expression: str):
    """`expression`'s value as the next frame paints it. The page puts what moved back from its
    ResizeObservers, which run after a frame's layout and before its paint; a value read in a task
    between frames can fall after a plot is drawn and before that correction, a position no reader
    ever sees. An observer made now runs after the page's own, in the frame's last step before paint."""
    return page.evaluate(
        "() => new Promise((done) => { const seen = new ResizeObserver(() => { seen.disconnect();"
        f" done({expression}); }}); seen.observe(document.documentElement); }})")


def type_sentence(page, text: str) -> None:
    """Replace the text box's content by typing, like a reader; wait until every view shows it."""
    box = page.get_by_test_id("source")
    box.fill("")
    box.press_sequentially(text, delay=5)
    page.wait_for_function("text => window.attentionLab.lastUpdate?.text === text", arg=text,
                           timeout=UPDATE_TIMEOUT_MS)


def show(page, testid: str):
    """Scroll a plot into view (plots far below the fold are drawn only when they come near the
    screen; one in a closed disclosure is opened first) and wait until it is drawn for the current
    text; return its locator."""
    plot = page.get_by_test_id(testid)
    # a plot in a closed fold (<details>) is drawn once a reader opens it: open it, as a reader would
    plot.evaluate("el => el.closest('details')?.setAttribute('open', '')")  # laid out before it scrolls
    plot.evaluate("el => el.scrollIntoView({block: 'center', behavior: 'instant'})")
    # asked every 100 ms, not at each animation frame (which depends on the page producing frames): a
    # frame-polled wait once ran out after 45 s with the plot reading as drawn at once after it
    try:
        page.wait_for_function(
            "id => { const el = document.querySelector(`[data-testid='${id}']`); return !el.dataset.stale"
            " && (el.querySelector('.main-svg') || el.querySelector('.plot-empty')); }",
            arg=testid, timeout=UPDATE_TIMEOUT_MS, polling=100,
        )
    except PlaywrightTimeout as error:  # say which plot, in which state (a CI log is all there is)
        state = plot.evaluate("el => ({stale: el.dataset.stale ?? null, drawn: !!el.querySelector('.main-svg'),"
                              " text: el.textContent.slice(0, 200), update: window.attentionLab.lastUpdate})")
        raise AssertionError(f"plot {testid!r} not shown for the current text: {state}") from error
    return plot


def sent_so_far(page) -> None:
    """Return once every request the page started before now has been reported to the test's
    listeners: the page fetches a marker, and Playwright reports a page's requests in the order it
    made them. A test asserting that the page asked nothing calls this (after the work that could
    have asked is done) instead of waiting a fixed time."""
    marker = f"/api/health?sent-so-far={uuid.uuid4().hex}"
    with page.expect_request(lambda request: marker in request.url):
        page.evaluate("url => { fetch(url); }", marker)


def asked_of_the_page(asked: list[str]) -> list[str]:
    """`asked` without sent_so_far's markers."""
    return [url for url in asked if "sent-so-far=" not in url]


def show_everything(page) -> None:
    """Bring every plot up to date (for full-page screenshots), then go back to the top."""
    for testid in page.locator(".plot").evaluate_all("els => els.map(e => e.dataset.testid)"):
        show(page, testid)
    page.evaluate("window.scrollTo({top: 0, behavior: 'instant'})")


def lost_model(health: dict, catalog: list[dict], gone: str) -> tuple[dict, str]:
    """Routes (for `open_page`) that answer as if the server had failed to load `gone`: left out of
    GET /api/health's models and GET /api/models, listed as unavailable with a reason; and the reason."""
    reason = f"FileNotFoundError: no checkpoint at {gone}/model.safetensors"
    served = {**health, "models": [n for n in health["models"] if n != gone], "unavailable": {gone: reason}}
    return {"**/api/health": lambda route: route.fulfill(json=served),
            "**/api/models": lambda route: route.fulfill(json=[m for m in catalog if m["name"] != gone]),
            }, reason
