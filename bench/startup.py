"""Start-up: from launching the server to its first 200 on GET /api/health, and where that time goes.

    .venv/bin/python bench/startup.py [--runs 5] [--json bench/results/startup.json]

Each run starts `uvicorn app.main:app` on the shipped checkpoints as `make serve` does (bench/serving.py),
and times it to the first healthy answer; the server's resident memory is read then. Beside each
run, in fresh processes: importing the app (`import app.main`), and importing torch alone, so the
part that is the models' loading and set-up can be told from the part that is Python importing.
Medians over the runs, each measure interleaved with the others; the machine's speed moves all of
them, so compare figures from one run of this script.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from serving import ROOT, serve, write_report  # noqa: E402


def healthy_seconds() -> tuple[float, float]:
    """Seconds from launching a server to its first healthy answer, and its resident MB then."""
    start = time.perf_counter()
    with serve():
        return time.perf_counter() - start, _server_rss_mb()


def _server_rss_mb() -> float:
    """Resident MB of the uvicorn serving app.main (the newest one, started by `serve`)."""
    newest, rss = -1.0, 0.0
    for status in Path("/proc").glob("[0-9]*/status"):
        try:
            cmdline = (status.parent / "cmdline").read_bytes().split(b"\0")
            if b"uvicorn" not in cmdline or b"app.main:app" not in cmdline:
                continue
            started = float((status.parent / "stat").read_text().rsplit(")", 1)[1].split()[19])
            fields = dict(line.split(":", 1) for line in status.read_text().splitlines() if ":" in line)
        except (OSError, ValueError):
            continue
        if started > newest:
            newest, rss = started, int(fields["VmRSS"].split()[0]) / 1024
    return rss


def import_seconds(module: str) -> float:
    code = f"import time; t = time.perf_counter(); import {module}; print(time.perf_counter() - t)"
    return float(subprocess.check_output([sys.executable, "-c", code], cwd=ROOT, text=True).strip())


def main() -> dict:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--json", default=None, help="write the figures here")
    args = p.parse_args()
    healthy, rss, app_import, torch_import = [], [], [], []
    healthy_seconds()  # a first start fills the file cache, as any start after the first finds it
    for _ in range(args.runs):
        seconds, mb = healthy_seconds()
        healthy.append(seconds)
        rss.append(mb)
        app_import.append(import_seconds("app.main"))
        torch_import.append(import_seconds("torch"))
    med = {name: round(statistics.median(values), 2) for name, values in
           (("healthy_s", healthy), ("import_app_s", app_import), ("import_torch_s", torch_import),
            ("rss_mb", rss))}
    report = {"runs": args.runs, "medians": med, "healthy_s": [round(s, 2) for s in healthy]}
    print(f"{args.runs} starts, medians: healthy after {med['healthy_s']} s (each: {report['healthy_s']}); "
          f"of which importing the app {med['import_app_s']} s (torch alone {med['import_torch_s']} s); "
          f"the rest, loading and setting up the models, {round(med['healthy_s'] - med['import_app_s'], 2)} s; "
          f"resident memory when healthy {med['rss_mb']} MB")
    write_report(args.json, report)
    return report


if __name__ == "__main__":
    main()
