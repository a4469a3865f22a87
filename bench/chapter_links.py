"""A shared chapter link, `/?ch=<slug>`, opened in a fresh browser for every chapter (not a test).

    .venv/bin/python bench/chapter_links.py --runs 3 --json bench/results/chapter_links.json
    .venv/bin/python bench/chapter_links.py --url http://127.0.0.1:8000   # a server already running

Without --url it starts a server on the shipped checkpoints as `make serve` does, and waits until
the server has computed the default sentence's answers ahead (its log says so), as a reader
arriving a minute after a deploy would find it. Each visit is a new browser context (nothing
cached), 1280x900. Times are milliseconds from the navigation's start:
- `load`: the page's load event;
- `first`: the chapter's first figure shows something (a drawn plot, its message, a filled table);
- `settled`: every figure of the chapter on the screen (none there: its first figure) shows
  something, no sentence of it on the screen waits for a number, and (the recap) every recap row
  carries its number.
Printed per chapter: the median over the runs, and first - load.
"""

from __future__ import annotations

import argparse
import math
import statistics
import tempfile
import time
from contextlib import nullcontext

from playwright.sync_api import TimeoutError as PlaywrightTimeout
from playwright.sync_api import sync_playwright
from serving import CHROMIUM, CHROMIUM_ARGS, JUST_SHOW_ME, serve, write_report  # bench/serving.py

from app import chapters

CHAPTERS = [c.slug for c in chapters.CHAPTERS]
AHEAD = "answers computed ahead"  # the server's log line once the default sentence is done
LIMIT_S = 60

# Installed before the page's scripts: on every frame, when chapter `ch`'s first figure and then all
# of them show something.
WATCH = """ch => {
  window.linkTimes = {};
  const FIGURES = ".plot, #predict-table, #cards, #recap";
  const hasNumber = (fact) => /\\d/.test(fact.textContent);
  const seen = (el) => {  // on the screen: what the reader of the link sees without scrolling
    const box = el.getBoundingClientRect();
    return el.offsetParent && box.bottom > 0 && box.top < innerHeight;
  };
  const shows = (el) => {
    if (el.classList.contains("plot")) return !el.dataset.stale && !!el.querySelector(".main-svg, .plot-empty");
    if (el.id === "recap") return [...el.querySelectorAll(".recap__fact")].some(hasNumber);
    return el.children.length > 0;
  };
  const check = () => {
    const section = document.querySelector(`section[data-chapter="${ch}"]`);
    if (section) {
      const all = [...section.querySelectorAll(FIGURES)].filter((e) => e.offsetParent);
      const onScreen = all.filter(seen);
      const figures = onScreen.length ? onScreen : all.slice(0, 1); // none on the screen: the chapter's first
      const shown = figures.filter(shows);
      const now = performance.now();
      if (shown.length && !window.linkTimes.first) window.linkTimes.first = now;
      const holes = [...section.querySelectorAll("[data-fact]")].some((f) => seen(f) && !f.textContent.trim());
      const recap = ch !== "point" || [...section.querySelectorAll(".recap__fact")].every(hasNumber);
      if (figures.length && shown.length === figures.length && !holes && recap && !window.linkTimes.settled) {
        window.linkTimes.settled = now;
      }
    }
    if (!window.linkTimes.settled) requestAnimationFrame(check);
  };
  requestAnimationFrame(check);
}"""


def visit(browser, base: str, chapter: str) -> dict:
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    context.add_init_script(JUST_SHOW_ME)  # the figures as before the questions came
    page = context.new_page()
    page.add_init_script(f"({WATCH})({chapter!r})")
    page.goto(f"{base}/?ch={chapter}")
    try:
        page.wait_for_function("() => window.linkTimes && window.linkTimes.settled", timeout=LIMIT_S * 1000)
    except PlaywrightTimeout:
        pass  # never settled: its `settled` is missing, and the chapter's figures say what is not there
    times = page.evaluate("""() => ({ ...window.linkTimes,
      load: performance.getEntriesByType("navigation")[0].loadEventEnd })""")
    context.close()
    times = {k: round(v) for k, v in times.items()}
    return {"load": times["load"], "first": times.get("first"), "settled": times.get("settled")}


def wait_for_log(log, text: str, timeout: float = 300) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        log.seek(0)
        if text in log.read():
            return
        time.sleep(0.5)
    raise RuntimeError(f"the server's log never said {text!r}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--url", help="a running server (default: start one on the shipped checkpoints)")
    parser.add_argument("--json", help="write the figures here")
    args = parser.parse_args()
    with tempfile.TemporaryFile("w+") as log:
        server = nullcontext(args.url.rstrip("/")) if args.url else serve(
            {"MALLOC_ARENA_MAX": "2"}, log_level="info", log=log)
        with server as base:
            if not args.url:
                wait_for_log(log, AHEAD)
            with sync_playwright() as playwright:
                browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
                runs = {ch: [visit(browser, base, ch) for _ in range(args.runs)] for ch in CHAPTERS}
                browser.close()
    report = {"runs": args.runs, "limit_s": LIMIT_S, "chapters": {}}
    print(f"{'ch':>3} {'load':>6} {'first':>6} {'first-load':>10} {'settled':>8}   (ms from navigation)")
    for ch, visits in runs.items():
        median = {k: statistics.median(v[k] if v[k] is not None else math.inf for v in visits)
                  for k in ("load", "first", "settled")}  # inf: not within LIMIT_S
        report["chapters"][ch] = {"median": {k: None if math.isinf(v) else v for k, v in median.items()},
                                  "visits": visits}
        after_load = median["first"] - median["load"]
        load, first, settled = median["load"], median["first"], median["settled"]
        print(f"{ch:>3} {load:>6.0f} {first:>6.0f} {after_load:>10.0f} {settled:>8.0f}")
    write_report(args.json, report)


if __name__ == "__main__":
    main()
