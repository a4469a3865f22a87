"""Mixed load on the shipped checkpoints: N clients for S seconds, as a class would use the page
(prints figures; not a test).

    .venv/bin/python bench/load.py                              # 16 clients, 60 s, its own uvicorn
    .venv/bin/python bench/load.py --seconds 8 --clients 4 --json /tmp/load.json
    .venv/bin/python bench/load.py --malloc-arena-max 2         # the server with MALLOC_ARENA_MAX=2
    .venv/bin/python bench/load.py --url http://127.0.0.1:8000 --pid 1234   # a running server

Each client (a thread with its own keep-alive connection) sends requests back to back, each picked
at random (seeded) by weight from: POST /api/translate and /api/attention (a random model each),
/api/compare (every model), /api/gradients; GET /api/health, /api/models, the page and its static
files. Texts are French sentences put together from parts, so the result cache sees both repeats
and new texts. A client answered 503 waits its Retry-After, as the page does. Meanwhile a separate
prober asks GET /api/health every 200 ms (a Kubernetes probe's view) on its own connection.

Printed: requests per second, p50/p95/p99 latency overall and per endpoint, errors by status code
(a failed connection or a timeout by its exception's name), health's worst latency, and the server
process's resident memory (VmRSS, and VmHWM, its peak) before and after. The server started here
runs with the open-network limits of `make serve` (UVICORN_* options) and its default settings:
result cache on, as deployed. `--json PATH` writes the same figures.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import threading
import time
from collections import Counter, defaultdict
from pathlib import Path

import httpx
from serving import ROOT, serve, write_report  # bench/serving.py: this script's folder is on sys.path

# `make serve`'s uvicorn limits (Makefile UVICORN_LIMITS), as uvicorn's own environment variables
UVICORN_LIMITS = {"UVICORN_HTTP": "app.serving:H11", "UVICORN_TIMEOUT_KEEP_ALIVE": "5",
                  "UVICORN_LIMIT_CONCURRENCY": "1024", "UVICORN_BACKLOG": "256"}
# every simulated reader asks from this one address: no per-client shares (app/runtime/shares.py),
# which would count them all as one client; a server given with --url keeps its own setting
SERVER_ENV = {**UVICORN_LIMITS, "ATTENTION_LAB_SHARES": "false"}
SUBJECTS = ["Je", "Tu", "Il", "Elle", "Nous", "Vous", "Ils", "Mon frère", "La voisine", "Le professeur"]
VERBS = ["mange", "regarde", "cherche", "aime", "prépare", "oublie", "achète", "lit"]
OBJECTS = ["du pain", "une pomme", "le journal", "la lettre", "un livre", "les clés", "ce film", "la soupe"]
ENDINGS = [".", " ce matin.", " avant la nuit.", " dans le jardin.", " avec ses amis.", " depuis hier.",
           " parce qu'il pleut.", " tous les jours à Paris."]
PROBE_EVERY_S = 0.2
# (label, weight): model requests are most of the traffic, as on the page
MIX = [("POST /api/translate", 3), ("POST /api/attention", 3), ("POST /api/compare", 1),
       ("POST /api/gradients", 1), ("GET /api/health", 1), ("GET /api/models", 1), ("GET static", 2)]


def sentence(rng: random.Random) -> str:
    """One of 5,120 sentences; the verb agrees only roughly, as a typing student's might."""
    return f"{rng.choice(SUBJECTS)} {rng.choice(VERBS)} {rng.choice(OBJECTS)}{rng.choice(ENDINGS)}"


def static_paths() -> list[str]:
    """The page, the vendored Plotly and every file under static/ (whatever is there now)."""
    files = sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "static").rglob("*") if p.is_file())
    return ["/", "/vendor/plotly.min.js", *(f"/{f}" for f in files)]


def one_request(client: httpx.Client, label: str, rng: random.Random, models: list[str],
                statics: list[str]) -> httpx.Response:
    method, path = label.split(" ", 1)
    if label == "GET static":
        return client.get(rng.choice(statics))
    if method == "GET":
        return client.get(path)
    body: dict = {"text": sentence(rng)}
    if path in ("/api/translate", "/api/attention"):
        body["model"] = rng.choice(models)
    return client.post(path, json=body)  # the whole answer is read (compare's NDJSON lines too)


class Recorder:
    """(label, status, seconds) of every request, from every thread."""

    def __init__(self):
        self.samples: list[tuple[str, str, float]] = []
        self._lock = threading.Lock()

    def add(self, label: str, status: str, seconds: float) -> None:
        with self._lock:
            self.samples.append((label, status, seconds))


def client_loop(url: str, seed: int, deadline: float, models: list[str], statics: list[str],
                recorder: Recorder) -> None:
    rng = random.Random(seed)
    labels, weights = zip(*MIX, strict=True)
    with httpx.Client(base_url=url, timeout=60) as client:
        while time.monotonic() < deadline:
            label = rng.choices(labels, weights)[0]
            started = time.perf_counter()
            try:
                response = one_request(client, label, rng, models, statics)
                status = str(response.status_code)
            except httpx.HTTPError as error:
                response, status = None, type(error).__name__
            recorder.add(label, status, time.perf_counter() - started)
            if response is not None and response.status_code == 503 and "retry-after" in response.headers:
                time.sleep(float(response.headers["retry-after"]))


def probe_loop(url: str, stop: threading.Event, recorder: Recorder) -> None:
    with httpx.Client(base_url=url, timeout=10) as client:
        while not stop.is_set():
            started = time.perf_counter()
            try:
                status = str(client.get("/api/health").status_code)
            except httpx.HTTPError as error:
                status = type(error).__name__
            elapsed = time.perf_counter() - started
            recorder.add("probe", status, elapsed)
            stop.wait(max(0.0, PROBE_EVERY_S - elapsed))


def memory(pid: int | None) -> dict[str, float] | None:
    """VmRSS and VmHWM of a process, in MiB (from /proc/PID/status), or None without a pid."""
    if pid is None:
        return None
    fields = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        name, _, value = line.partition(":")
        if name in ("VmRSS", "VmHWM"):
            fields[name] = round(int(value.split()[0]) / 1024, 1)  # kB -> MiB
    return fields


def child_server_pid(url: str) -> int | None:
    """The uvicorn this process started for `url` (bench/serving.py does not say its pid)."""
    port = url.rsplit(":", 1)[1]
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            command = (entry / "cmdline").read_bytes().split(b"\0")
        except (OSError, IndexError, ValueError):
            continue
        if ppid == os.getpid() and b"uvicorn" in command and port.encode() in command:
            return int(entry.name)
    return None


def percentiles(seconds: list[float]) -> dict[str, float]:
    """p50, p95, p99 and max in milliseconds."""
    ms = sorted(1000 * s for s in seconds)
    if len(ms) == 1:
        return {"p50": ms[0], "p95": ms[0], "p99": ms[0], "max": ms[0]}
    cuts = statistics.quantiles(ms, n=100, method="inclusive")
    return {"p50": round(cuts[49], 1), "p95": round(cuts[94], 1), "p99": round(cuts[98], 1),
            "max": round(ms[-1], 1)}


def run(url: str, pid: int | None, clients: int, seconds: float) -> dict:
    health = httpx.get(f"{url}/api/health", timeout=10).json()
    models = list(health["models"])
    statics = static_paths()
    before = memory(pid)
    recorder, probes = Recorder(), Recorder()
    stop = threading.Event()
    prober = threading.Thread(target=probe_loop, args=(url, stop, probes))
    deadline = time.monotonic() + seconds
    threads = [threading.Thread(target=client_loop, args=(url, seed, deadline, models, statics, recorder))
               for seed in range(clients)]
    started = time.monotonic()
    prober.start()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    elapsed = time.monotonic() - started  # includes the last requests' tails
    stop.set()
    prober.join()
    after = memory(pid)
    return summary(recorder.samples, probes.samples, elapsed, clients, models, before, after)


def summary(samples, probes, elapsed, clients, models, before, after) -> dict:
    by_label = defaultdict(list)
    for label, status, seconds in samples:
        by_label[label].append((status, seconds))
    endpoints = {}
    for label, _ in MIX:
        rows = by_label.get(label, [])
        if rows:
            errors = Counter(s for s, _ in rows if not s.startswith("2"))
            endpoints[label] = {"requests": len(rows), "per_s": round(len(rows) / elapsed, 2),
                                **percentiles([t for _, t in rows]), "errors": dict(errors)}
    probe_ok = [t for _, s, t in probes if s == "200"]
    return {
        "clients": clients, "seconds": round(elapsed, 1), "models": models, "cpus": os.cpu_count(),
        "requests": len(samples), "per_s": round(len(samples) / elapsed, 2),
        "latency_ms": percentiles([t for *_, t in samples]) if samples else None,
        "errors": dict(Counter(s for _, s, _ in samples if not s.startswith("2"))),
        "endpoints": endpoints,
        "health_probe": {"probes": len(probes), "worst_ms": round(1000 * max(t for *_, t in probes), 1),
                         **({"p99_ms": percentiles(probe_ok)["p99"]} if probe_ok else {}),
                         "errors": dict(Counter(s for _, s, _ in probes if s != "200"))},
        "memory_mib": {"before": before, "after": after},
    }


def report(figures: dict) -> None:
    latency = figures["latency_ms"]
    print(f"{figures['clients']} clients for {figures['seconds']} s on {figures['cpus']} CPUs, "
          f"models {', '.join(figures['models'])}")
    print(f"{figures['requests']} requests, {figures['per_s']} requests/s; latency ms p50 {latency['p50']}, "
          f"p95 {latency['p95']}, p99 {latency['p99']}, max {latency['max']}")
    print(f"{'endpoint':<22} {'requests':>8} {'per s':>7} {'p50':>8} {'p95':>8} {'p99':>8} {'max':>8}  errors")
    for label, row in figures["endpoints"].items():
        print(f"{label:<22} {row['requests']:8d} {row['per_s']:7.2f} {row['p50']:8.1f} {row['p95']:8.1f} "
              f"{row['p99']:8.1f} {row['max']:8.1f}  {row['errors'] or '-'}")
    print(f"errors by status: {figures['errors'] or 'none'}")
    probe = figures["health_probe"]
    print(f"health prober (every {PROBE_EVERY_S * 1000:.0f} ms): {probe['probes']} probes, worst "
          f"{probe['worst_ms']} ms, p99 {probe.get('p99_ms', '-')} ms, errors {probe['errors'] or 'none'}")
    memory_mib = figures["memory_mib"]
    if memory_mib["before"]:
        print(f"server resident memory MiB: before VmRSS {memory_mib['before']['VmRSS']} "
              f"(peak {memory_mib['before']['VmHWM']}), after VmRSS {memory_mib['after']['VmRSS']} "
              f"(peak {memory_mib['after']['VmHWM']})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--url", help="load a running server instead of starting one")
    parser.add_argument("--pid", type=int, help="with --url: the server's process, for its memory")
    parser.add_argument("--malloc-arena-max", type=int, help="MALLOC_ARENA_MAX for the started server")
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    args = parser.parse_args()
    if args.url:
        figures = run(args.url.rstrip("/"), args.pid, args.clients, args.seconds)
    else:
        env = dict(SERVER_ENV)
        if args.malloc_arena_max:
            env["MALLOC_ARENA_MAX"] = str(args.malloc_arena_max)
        with serve(env) as url:
            figures = run(url, child_server_pid(url), args.clients, args.seconds)
        figures["malloc_arena_max"] = args.malloc_arena_max
    report(figures)
    write_report(args.json, figures)


if __name__ == "__main__":
    main()
