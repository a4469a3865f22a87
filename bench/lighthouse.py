"""The page under Lighthouse, desktop and mobile presets, medians of several runs (not a test).

    .venv/bin/python bench/lighthouse.py --runs 3 --json bench/results/lighthouse.json
    .venv/bin/python bench/lighthouse.py --url http://127.0.0.1:8000/   # a server already running

Lighthouse (a Node program, pinned below) is installed on first use into a cache folder outside the
repository (LIGHTHOUSE_HOME, default ~/.cache/attention-lab/lighthouse) with npm; Node 18 or newer
and Debian's chromium are needed for this benchmark only, never to serve or test the app. Without
--url it starts its own server on the shipped checkpoints, as `make serve` does, and warms it with one
load of the page first (the first answers after start-up are the slowest).

Each run is a fresh Chrome profile, so nothing is cached between runs. Printed per preset: the
median of each figure over the runs, with its smallest and largest; the reports' raw figures are in
the JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import tempfile
from contextlib import nullcontext
from pathlib import Path

from serving import CHROMIUM, serve, write_report  # bench/serving.py

VERSION = "12.2.3"
HOME = Path(os.environ.get("LIGHTHOUSE_HOME", Path.home() / ".cache" / "attention-lab" / "lighthouse"))
PRESETS = ("desktop", "mobile")
CATEGORIES = ("performance", "accessibility", "best-practices", "seo")
AUDITS = {  # figure -> the audit whose numericValue it is
    "fcp_ms": "first-contentful-paint",
    "lcp_ms": "largest-contentful-paint",
    "tbt_ms": "total-blocking-time",
    "cls": "cumulative-layout-shift",
    "si_ms": "speed-index",
    "tti_ms": "interactive",
}


def lighthouse_bin() -> Path:
    """The pinned Lighthouse's command, installed into HOME with npm when missing."""
    binary = HOME / "node_modules" / ".bin" / "lighthouse"
    installed = HOME / "node_modules" / "lighthouse" / "package.json"
    if not installed.exists() or json.loads(installed.read_text())["version"] != VERSION:
        if shutil.which("npm") is None:
            raise SystemExit("bench/lighthouse.py needs Node 18+ and npm (apt-get install -y nodejs npm)")
        HOME.mkdir(parents=True, exist_ok=True)
        subprocess.run(["npm", "install", "--silent", "--no-audit", "--no-fund", "--prefix", str(HOME),
                        "--save-exact", f"lighthouse@{VERSION}"], check=True)
    return binary


def one_run(binary: Path, url: str, preset: str) -> dict:
    with tempfile.TemporaryDirectory() as folder:
        report = Path(folder) / "report.json"
        command = [str(binary), url, "--quiet", "--output=json", f"--output-path={report}",
                   f"--chrome-flags=--headless=new --no-sandbox --disable-gpu --user-data-dir={folder}/profile",
                   "--only-categories=" + ",".join(CATEGORIES)]
        if preset == "desktop":
            command.append("--preset=desktop")
        subprocess.run(command, check=True, env={**os.environ, "CHROME_PATH": CHROMIUM})
        data = json.loads(report.read_text())
    figures = {c: data["categories"][c]["score"] for c in CATEGORIES}
    figures.update({name: data["audits"][audit]["numericValue"] for name, audit in AUDITS.items()})
    figures["long_tasks"] = [
        {"url": t.get("url", ""), "ms": round(t["duration"])}
        for t in (data["audits"].get("long-tasks", {}).get("details") or {}).get("items", [])[:6]
    ]
    return figures


def summary(runs: list[dict]) -> dict:
    keys = [k for k in runs[0] if k != "long_tasks"]
    return {k: {"median": statistics.median(r[k] for r in runs), "min": min(r[k] for r in runs),
                "max": max(r[k] for r in runs)} for k in keys}


def show(preset: str, figures: dict) -> None:
    def one(key: str, scale: float = 1, digits: int = 0) -> str:
        f = figures[key]
        return "{:.{d}f} ({:.{d}f}-{:.{d}f})".format(f["median"] * scale, f["min"] * scale, f["max"] * scale,
                                                     d=digits)
    print(f"{preset:8s} performance {one('performance', 1, 2)}  TBT {one('tbt_ms')} ms  CLS {one('cls', 1, 3)}"
          f"  FCP {one('fcp_ms')} ms  LCP {one('lcp_ms')} ms  TTI {one('tti_ms')} ms"
          f"  a11y/bp/seo {figures['accessibility']['median']:.2f}/{figures['best-practices']['median']:.2f}"
          f"/{figures['seo']['median']:.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--url", help="a running server (default: start one on the shipped checkpoints)")
    parser.add_argument("--presets", default=",".join(PRESETS))
    parser.add_argument("--json", help="write the figures here")
    args = parser.parse_args()
    binary = lighthouse_bin()
    with nullcontext(args.url.rstrip("/")) if args.url else serve({"MALLOC_ARENA_MAX": "2"}) as base:
        for path in ("/", "/vendor/plotly.min.js"):  # the template and Plotly's gzip, made once per process
            subprocess.run(["curl", "-s", "--compressed", "-o", "/dev/null", f"{base}{path}"], check=False)
        report = {"version": VERSION, "runs": args.runs, "presets": {}}
        for preset in args.presets.split(","):
            runs = [one_run(binary, f"{base}/", preset) for _ in range(args.runs)]
            report["presets"][preset] = {"median": summary(runs), "runs": runs}
            show(preset, report["presets"][preset]["median"])
    write_report(args.json, report)


if __name__ == "__main__":
    main()
