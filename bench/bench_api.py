"""Latency and throughput of POST /api/attention on the shipped checkpoints (prints figures; not a test).

    .venv/bin/python bench/bench_api.py                        # starts its own uvicorn on a free port
    .venv/bin/python bench/bench_api.py --torch-threads 1      # model thread on one core (default: all)
    .venv/bin/python bench/bench_api.py --url http://127.0.0.1:8000   # a running server (cache on!)

For each loaded model: p50 / p95 latency of sequential requests, each on a different 10-word
sentence, with the server's result cache switched off, so every request decodes and builds every
map. Then POST /api/compare (every model in one request, as the page asks): time to its first
and to its last line. Then throughput (requests per second) with 8 clients at once, for the
Transformer and for a mix of all models. Target on the 2-core machines: transformer p50 <= 30 ms,
p95 <= 60 ms.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import socket
import statistics
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
SENTENCES = [  # ten words each (the final punctuation is one more piece)
    "Je pense que nous devrions partir avant la nuit ce soir.",
    "Elle a oublié son parapluie dans le train ce matin encore.",
    "Mon frère aîné travaille dans une grande banque à Paris maintenant.",
    "Nous avons mangé du pain frais avec du fromage hier soir.",
    "Il ne sait pas encore pourquoi son chat est parti hier.",
    "Les enfants jouent dans le jardin pendant que leurs parents dorment.",
    "Tu devrais lire ce livre si tu aimes les histoires tristes.",
    "Je voudrais réserver une table pour quatre personnes samedi soir prochain.",
    "Ce musée est fermé le lundi mais ouvert tous les autres.",
    "Nous irons à la plage demain s'il fait beau et chaud.",
    "Pourquoi est-ce que tu ne m'as pas appelé hier après-midi ?",
    "Le médecin lui a conseillé de dormir davantage et de marcher.",
]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def local_server(torch_threads: int | None):
    """uvicorn on the shipped checkpoints, cache off; yields its base URL, stops it after."""
    port = free_port()
    env = {**os.environ, "ATTENTION_LAB_CACHE_SIZE": "0"}
    if torch_threads:
        env["ATTENTION_LAB_TORCH_THREADS"] = str(torch_threads)
    command = [sys.executable, "-m", "uvicorn", "app.main:app", "--host", "127.0.0.1", "--port", str(port),
               "--log-level", "warning"]
    process = subprocess.Popen(command, cwd=ROOT, env=env)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_until_up(url, process)
        yield url
    finally:
        process.terminate()
        process.wait(timeout=30)


def wait_until_up(url: str, process: subprocess.Popen, seconds: float = 120) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"server exited with {process.returncode}")
        with contextlib.suppress(httpx.HTTPError):
            if httpx.get(f"{url}/api/health", timeout=2).status_code == 200:
                return
        time.sleep(0.3)
    raise SystemExit("server did not start")


def timed_post(client: httpx.Client, model: str, text: str) -> tuple[float, int]:
    """Seconds for one request, and the number of target pieces it produced."""
    start = time.perf_counter()
    response = client.post("/api/attention", json={"text": text, "model": model})
    elapsed = time.perf_counter() - start
    response.raise_for_status()
    return elapsed, len(response.json()["target_tokens"])


def latency(url: str, model: str, requests: int) -> tuple[float, float, float]:
    """(p50, p95) in ms of sequential requests, a different sentence each time, and the mean
    output length in pieces (decoding time grows with it)."""
    with httpx.Client(base_url=url, timeout=60) as client:
        for text in SENTENCES[:3]:
            timed_post(client, model, text)  # warm-up: first calls allocate
        runs = [timed_post(client, model, SENTENCES[i % len(SENTENCES)]) for i in range(requests)]
    times = [seconds for seconds, _ in runs]
    cuts = statistics.quantiles(times, n=20, method="inclusive")
    return 1000 * statistics.median(times), 1000 * cuts[18], statistics.mean(n for _, n in runs)


def compare_latency(url: str, requests: int) -> tuple[float, float, float]:
    """POST /api/compare, every loaded model: (p50 to the last line, its p95, p50 to the first
    line) in ms, sequential requests on different sentences."""
    def timed(client: httpx.Client, text: str) -> tuple[float, float]:
        start = time.perf_counter()
        marks = []
        with client.stream("POST", "/api/compare", json={"text": text}) as response:
            response.raise_for_status()
            for line in response.iter_lines():
                if line.strip():
                    marks.append(time.perf_counter() - start)
        return marks[0], marks[-1]

    with httpx.Client(base_url=url, timeout=60) as client:
        for text in SENTENCES[:3]:
            timed(client, text)
        runs = [timed(client, SENTENCES[i % len(SENTENCES)]) for i in range(requests)]
    last = [b for _, b in runs]
    cuts = statistics.quantiles(last, n=20, method="inclusive")
    return 1000 * statistics.median(last), 1000 * cuts[18], 1000 * statistics.median(a for a, _ in runs)


def throughput(url: str, models: list[str], requests: int, clients: int) -> float:
    """Requests per second with `clients` concurrent clients, each with its own connection."""
    jobs = [(models[i % len(models)], SENTENCES[i % len(SENTENCES)]) for i in range(requests)]
    shares = [jobs[c::clients] for c in range(clients)]

    def run(share):
        with httpx.Client(base_url=url, timeout=120) as client:
            for model, text in share:
                timed_post(client, model, text)

    start = time.perf_counter()
    with ThreadPoolExecutor(clients) as pool:
        list(pool.map(run, shares))
    return requests / (time.perf_counter() - start)


def report(url: str, args) -> None:
    health = httpx.get(f"{url}/api/health", timeout=10).json()
    models = health["models"]
    print(f"server {url}: device {health['device']}, models {', '.join(models)}; "
          f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}")
    print(f"{'model':<14} {'p50 ms':>8} {'p95 ms':>8} {'pieces out':>10}   "
          f"(POST /api/attention, {args.requests} sentences)")
    for model in models:
        p50, p95, pieces = latency(url, model, args.requests)
        print(f"{model:<14} {p50:8.1f} {p95:8.1f} {pieces:10.1f}")
    p50, p95, first = compare_latency(url, args.requests)
    print(f"{'all (compare)':<14} {p50:8.1f} {p95:8.1f}   first line p50 {first:.1f} ms "
          f"(POST /api/compare, {len(models)} models per request)")
    mixes = [["transformer"]] if "transformer" in models else []
    if models != ["transformer"]:
        mixes.append(models)
    for mix in mixes:
        rate = throughput(url, mix, args.throughput_requests, args.clients)
        print(f"throughput, {args.clients} clients, {'+'.join(mix)}: {rate:.1f} requests/s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--url", help="benchmark a running server instead of starting one")
    parser.add_argument("--requests", type=int, default=40, help="sequential requests per model")
    parser.add_argument("--throughput-requests", type=int, default=80)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--torch-threads", type=int, help="ATTENTION_LAB_TORCH_THREADS for the started server")
    args = parser.parse_args()
    if args.url:
        report(args.url.rstrip("/"), args)
        return
    with local_server(args.torch_threads) as url:
        report(url, args)


if __name__ == "__main__":
    main()
