"""A new reader's first visit, on a fresh server, counted for faults (not a test: it prints figures).

    .venv/bin/python bench/first_visit.py --runs 10 --json bench/results/first_visit.json

Each run starts a new uvicorn on the shipped checkpoints, as `make serve` does (its log at INFO),
opens the page in Chromium, types "Je mange du pain." into the source box, scrolls every chapter
into view at a reader's pace, then types five short sentences after it. It counts:
- `server_errors`: answers with a 5xx status the page received;
- `page_errors`: uncaught exceptions and console errors in the page;
- `tracebacks`: Python tracebacks in the server's log (and the log's request lines, for scale).
All three should be 0 on every run.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time

from playwright.sync_api import sync_playwright
from serving import CHROMIUM, CHROMIUM_ARGS, serve, write_report  # bench/serving.py

FIRST_UPDATE = "() => window.attentionLab && window.attentionLab.lastUpdate !== null"
FIRST = "Je mange du pain."
AFTER = ["Il fait froid.", "Où est la gare ?", "Je lis un livre.", "Nous partons demain.", "Le chat dort."]
READING_PAUSE_S = 0.6  # between two chapters scrolled into view
KEY_DELAY_MS = 60


def one_visit(browser, url: str) -> dict:
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    errors: list[str] = []
    server_errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(f"uncaught: {e}"))
    page.on("console", lambda m: m.type == "error" and errors.append(m.text))
    page.on("response", lambda r: r.status >= 500 and server_errors.append(f"{r.status} {r.url}"))
    page.goto(url)
    page.wait_for_function(FIRST_UPDATE, timeout=60_000)
    box = page.get_by_test_id("source")
    box.fill("")
    box.press_sequentially(FIRST, delay=KEY_DELAY_MS)
    for chapter in page.locator("section.chapter").all():
        chapter.scroll_into_view_if_needed()
        time.sleep(READING_PAUSE_S)
    box.scroll_into_view_if_needed()
    for sentence in AFTER:
        box.press("End")
        box.press_sequentially(" " + sentence, delay=KEY_DELAY_MS)
        time.sleep(0.3)
    typed = box.input_value()
    page.wait_for_function("t => window.attentionLab.lastUpdate?.text === t", arg=typed, timeout=60_000)
    time.sleep(2)  # what the last sentence started (lazy chapters) finishes
    context.close()
    return {"server_errors": server_errors, "page_errors": errors}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--json", help="also write the figures here")
    parser.add_argument("--logs", help="keep each run's server log in this folder")
    args = parser.parse_args()
    runs = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        for _ in range(args.runs):
            with tempfile.NamedTemporaryFile("w+", suffix=".log") as log:
                with serve(dict(os.environ), log_level="info", log=log) as url:
                    visit = one_visit(browser, url)
                log.seek(0)
                text = log.read()
            if args.logs:
                os.makedirs(args.logs, exist_ok=True)
                with open(os.path.join(args.logs, f"run-{len(runs)}.log"), "w") as kept:
                    kept.write(text)
            visit["tracebacks"] = text.count("Traceback (most recent call last)")
            visit["log_lines"] = text.count("\n")
            visit["log_tail"] = [line for line in text.splitlines() if "Error" in line][:5]
            runs.append(visit)
            print(json.dumps({k: len(v) if isinstance(v, list) and k != "log_tail" else v
                              for k, v in visit.items()}, ensure_ascii=False), flush=True)
        browser.close()
    totals = {key: sum(len(r[key]) for r in runs) for key in ("server_errors", "page_errors")}
    totals["tracebacks"] = sum(r["tracebacks"] for r in runs)
    print(f"{args.runs} runs: {totals}")
    write_report(args.json, {"runs": runs, "totals": totals})


if __name__ == "__main__":
    main()
