"""The app in a uvicorn subprocess on a free port, for the benchmarks and the browser tests, and
the benchmarks' JSON reports.

    with serve({"ATTENTION_LAB_CACHE_SIZE": "0"}) as url:
        httpx.get(f"{url}/api/health")

Importable as `bench.serving` from the repository root and as `serving` from a script in bench/.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = "/usr/bin/chromium"  # Debian's; Playwright drives it, so no browser download is needed
CHROMIUM_ARGS = [
    "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
]
# A browser context's init script: the reader chose "Just show me" (static/js/questions.js), unless
# the page already stored a choice. A first visit is asked a question before each chapter's figures;
# what measures or tests those figures sees them at once, as a reader who skips the questions does.
JUST_SHOW_ME = ("if (localStorage.getItem('attentionLab.questions') === null)"
                " localStorage.setItem('attentionLab.questions', 'show');")


def write_report(path: str | Path | None, report: dict) -> None:
    """Write a benchmark's figures as JSON to `path` (its folder made if needed); None: nowhere."""
    if path is not None:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_text(json.dumps(report, indent=2) + "\n")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def serve(env: dict[str, str] | None = None, app: str = "app.main:app", timeout: float = 120,
          log_level: str = "warning", log=None, root: Path = ROOT) -> Iterator[str]:
    """Start uvicorn serving `app` with `env` added to this process's environment; yield its base
    URL (no trailing slash) once GET /api/health answers 200; stop it on leaving. The server's
    output goes to `log` (an open text file; default a temporary one) whose tail is in the error
    raised when it exits or does not answer. `log_level`: uvicorn's and the app's. `root`: the
    checkout whose app is served (another worktree: the code of another commit, on this venv)."""
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    command = [sys.executable, "-m", "uvicorn", app, "--host", "127.0.0.1", "--port", str(port),
               "--log-level", log_level, "--no-access-log"]  # the app logs each request itself
    with contextlib.nullcontext(log) if log is not None else tempfile.TemporaryFile("w+") as log:
        process = subprocess.Popen(command, cwd=root, env={**os.environ, "ATTENTION_LAB_LOG_LEVEL": log_level,
                                                            **(env or {})},
                                   stdout=log, stderr=subprocess.STDOUT)
        try:
            wait_for_health(url, process, log, timeout)
            yield url
        finally:
            process.terminate()
            try:
                process.wait(10)
            except subprocess.TimeoutExpired:
                process.kill()


def commands() -> dict[int, list[bytes]]:
    """Every process on this machine that can be read: its id -> its command line's words, from /proc."""
    found = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                found[int(entry.name)] = (entry / "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
    return found


def live_processes() -> set[int]:
    """The ids of the live training processes running on this machine (`python -m models.live run`,
    started by a server for POST /api/train)."""
    return {pid for pid, command in commands().items() if b"models.live" in command and b"run" in command}


def wait_for_health(url: str, process: subprocess.Popen, log, timeout: float) -> None:
    """Poll GET /api/health until it answers 200 (a server without any model answers 503)."""
    deadline = time.monotonic() + timeout
    while True:
        if process.poll() is not None:
            raise RuntimeError(f"uvicorn exited with {process.returncode}:\n{tail(log)}")
        with contextlib.suppress(httpx.HTTPError):
            if httpx.get(f"{url}/api/health", timeout=2).status_code == 200:
                return
        if time.monotonic() > deadline:
            raise RuntimeError(f"uvicorn did not answer within {timeout:.0f} s:\n{tail(log)}")
        time.sleep(0.2)


def tail(log, chars: int = 3000) -> str:
    log.seek(0)
    return log.read()[-chars:]
