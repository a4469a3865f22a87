"""Two server processes (`make serve WORKERS=2`, `UVICORN_WORKERS=2`; docs/SERVER.md, "Two
processes"): each loads the models and answers on the one port, whichever takes a connection."""

from __future__ import annotations

import re
import time
from pathlib import Path

import httpx
import pytest

from bench.serving import commands, serve
from tests.app.conftest import LEAN_SERVER
from tests.tiny import ROOT

SENTENCE = "Je mange du pain."


def parent_of(pid: int) -> int | None:
    try:  # the field after the command's name, which is in parentheses and may hold spaces
        return int(Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[1])
    except (OSError, IndexError, ValueError):
        return None


def workers_of(port: int) -> list[int]:
    """The processes the uvicorn serving `port` started to serve (its spawned children)."""
    running = commands()
    uvicorn = next(pid for pid, command in running.items()
                   if b"uvicorn" in command and str(port).encode() in command)
    return [pid for pid, command in running.items()
            if parent_of(pid) == uvicorn and any(b"spawn_main" in word for word in command)]


def resident_mb(pid: int) -> float:
    status = Path(f"/proc/{pid}/status").read_text()
    return int(re.search(r"VmRSS:\s+(\d+) kB", status).group(1)) / 1024


def translate(client: httpx.Client, tries: int = 10) -> httpx.Response:
    """POST /api/translate as the page asks: a 503 (a process still starting its stepper processes
    beside the other's can fall behind for a moment) says when to ask again, and is asked again then."""
    for _ in range(tries):
        answer = client.post("/api/translate", json={"text": SENTENCE, "model": "transformer"})
        if answer.status_code != 503:
            return answer
        time.sleep(float(answer.headers["Retry-After"]))
    return answer


def test_make_serve_takes_its_processes_from_workers():
    makefile = (ROOT / "Makefile").read_text()
    serve_rule = re.search(r"^serve:.*\n\t(.+)$", makefile, re.M).group(1)
    assert "--workers $(WORKERS)" in serve_rule
    assert re.search(r"^WORKERS \?= 1$", makefile, re.M), "one process unless asked"


@pytest.mark.slow
def test_two_processes_each_load_the_models_and_answer_on_one_port(tiny_checkpoints):
    env = {"ATTENTION_LAB_CHECKPOINTS": str(tiny_checkpoints), "ATTENTION_LAB_DEVICE": "cpu", **LEAN_SERVER,
           "ATTENTION_LAB_SHARES": "false", "UVICORN_WORKERS": "2"}
    with serve(env, timeout=120) as url:
        workers = workers_of(int(url.rsplit(":", 1)[1]))
        assert len(workers) == 2
        translations = set()
        for _ in range(12):  # a new connection each time, as a page's aborted request leaves it
            with httpx.Client(base_url=url, timeout=60) as client:
                assert client.get("/api/health").status_code == 200
                answer = translate(client)
                assert answer.status_code == 200, (answer.status_code, answer.text)
                translations.add(answer.json()["translation"])
        assert len(translations) == 1, "both processes translate alike"
        # each process holds its own models (torch and the weights: far more than a bare interpreter)
        assert all(resident_mb(pid) > 150 for pid in workers), [resident_mb(pid) for pid in workers]

