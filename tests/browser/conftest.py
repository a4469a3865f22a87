"""Browser tests: Playwright for Python drives Debian's chromium against a real uvicorn.

The server runs `app.main:app` in a subprocess on a free port, reading a session-scoped folder of
tiny, untrained checkpoints of all five models (built here with the real tokenizer), so the tests
are fast, deterministic and independent of the training that fills `checkpoints/`.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
]
MODEL_NAMES = ("rnn", "lstm", "lstm-additive", "lstm-dot", "transformer")
APP = os.environ.get("ATTENTION_LAB_BROWSER_APP", "app.main:app")  # point the tests at another server


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def tiny_config(name: str, vocab_size: int):
    """A few-thousand-parameter version of each shipped architecture: loads and answers in ms."""
    from models.config import Seq2SeqConfig, TransformerConfig

    if name == "transformer":
        return TransformerConfig(vocab_size=vocab_size, d_model=32, n_heads=4, n_encoder_layers=3,
                                 n_decoder_layers=3, d_ff=64, max_len=160)
    cell = "rnn" if name == "rnn" else "lstm"
    attention = {"lstm-additive": "additive", "lstm-dot": "dot"}.get(name)
    return Seq2SeqConfig(vocab_size=vocab_size, cell=cell, attention=attention, d_embed=16, d_hidden=32,
                         d_attn=16, max_len=24)


def tiny_metrics(seed: int) -> dict:
    """Made-up evaluation figures in the shape of metrics.json, so the page has scores to show."""
    base = 20.0 + 4 * seed
    buckets = [("1-5", 800, 12), ("6-10", 4000, 3), ("11-15", 1200, -6), ("16+", 300, -12)]
    return {"bleu": base, "chrf": base + 15, "pairs": 6300,
            "bleu_by_length": [{"bucket": b, "pairs": n, "bleu": base + d, "chrf": base + d + 15}
                               for b, n, d in buckets]}


@pytest.fixture(scope="session")
def tiny_checkpoints(tmp_path_factory) -> Path:
    import torch

    from models import checkpoint
    from models.architectures import build
    from models.checkpoint import METRICS, write_json
    from models.tokenizer import BPETokenizer

    folder = tmp_path_factory.mktemp("checkpoints")
    shutil.copy(ROOT / "checkpoints" / "tokenizer.json", folder / "tokenizer.json")
    vocab_size = BPETokenizer.load(folder / "tokenizer.json").vocab_size
    for seed, name in enumerate(MODEL_NAMES):
        torch.manual_seed(seed)
        model = build(tiny_config(name, vocab_size))
        checkpoint.save(model, folder / name, {"name": name})
        write_json(folder / name / METRICS, tiny_metrics(seed))
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
def server(chromium, tiny_checkpoints, tmp_path_factory) -> str:
    """Base URL of a uvicorn serving the app on a free port; stopped at the end of the session."""
    port = free_port()
    log = tmp_path_factory.mktemp("server") / "uvicorn.log"
    env = {**os.environ, "ATTENTION_LAB_CHECKPOINTS": str(tiny_checkpoints), "ATTENTION_LAB_DEVICE": "cpu"}
    with log.open("w") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "uvicorn", APP, "--host", "127.0.0.1", "--port", str(port),
             "--log-level", "warning"],
            cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT,
        )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            if process.poll() is not None:
                pytest.fail(f"uvicorn exited with {process.returncode}:\n{log.read_text()[-3000:]}")
            try:
                if httpx.get(f"{url}/api/health", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"uvicorn did not answer within 60 s:\n{log.read_text()[-3000:]}")
            time.sleep(0.2)
        yield url
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()


@pytest.fixture(scope="session")
def available(server) -> list[str]:
    return httpx.get(f"{server}/api/health").json()["models"]


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


@pytest.fixture(scope="session")
def browser_context(chromium, server):
    """One context for the whole session: pages share its HTTP and compiled-code cache, so only the
    first page pays for parsing plotly.js from scratch."""
    context = chromium.new_context(viewport={"width": 1280, "height": 900})
    yield context
    context.close()


@pytest.fixture
def open_page(browser_context, server):
    """open_page(query="", width=1280) -> (page, problems), the page loaded and its first update done."""
    pages = []

    def _open(query: str = "", width: int = 1280, height: int = 900):
        page = browser_context.new_page()
        pages.append(page)
        page.set_viewport_size({"width": width, "height": height})
        problems = Problems(page)
        page.goto(f"{server}/{query}")
        page.wait_for_function("window.attentionLab && window.attentionLab.lastUpdate !== null", timeout=20_000)
        return page, problems

    yield _open
    for page in pages:
        page.close()


@pytest.fixture(scope="session")
def shared_page(browser_context, server):
    """One loaded page that several tests drive in turn (each leaves it usable): loading plotly.js
    is the slow part of a page, so tests that only type and click share it."""
    page = browser_context.new_page()
    problems = Problems(page)
    page.goto(f"{server}/")
    page.wait_for_function("window.attentionLab && window.attentionLab.lastUpdate !== null", timeout=20_000)
    yield page, problems
    page.close()


def type_sentence(page, text: str) -> None:
    """Replace the text box's content by typing, like a reader; wait until every view shows it."""
    box = page.get_by_test_id("source")
    box.fill("")
    box.press_sequentially(text, delay=5)
    page.wait_for_function("text => window.attentionLab.lastUpdate?.text === text", arg=text, timeout=15_000)


def show(page, testid: str):
    """Scroll a plot into view (plots far below the fold are drawn only when they come near the
    screen) and wait until it is drawn for the current text; return its locator."""
    plot = page.get_by_test_id(testid)
    plot.evaluate("el => el.scrollIntoView({block: 'center', behavior: 'instant'})")
    page.wait_for_function(
        "id => { const el = document.querySelector(`[data-testid='${id}']`);"
        " return !el.dataset.stale && (el.querySelector('.main-svg') || el.querySelector('.plot-empty')); }",
        arg=testid, timeout=15_000,
    )
    return plot


def show_everything(page) -> None:
    """Bring every plot up to date (for full-page screenshots), then go back to the top."""
    for testid in page.locator(".plot").evaluate_all("els => els.map(e => e.dataset.testid)"):
        show(page, testid)
    page.evaluate("window.scrollTo({top: 0, behavior: 'instant'})")
