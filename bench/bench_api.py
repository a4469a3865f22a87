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
import os
import statistics
import time
from concurrent.futures import ThreadPoolExecutor

import httpx
from serving import serve  # bench/serving.py: this script's folder is on sys.path

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
    # the Transformer-like models alone (self-attention: the most work per request), then every model
    infos = httpx.get(f"{url}/api/models", timeout=10).json()
    mixes = [[m["name"]] for m in infos if "encoder" in m["attention_kinds"]]
    if [models] not in mixes:
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
    env = {"ATTENTION_LAB_CACHE_SIZE": "0"}
    if args.torch_threads:
        env["ATTENTION_LAB_TORCH_THREADS"] = str(args.torch_threads)
    with serve(env) as url:
        report(url, args)


if __name__ == "__main__":
    main()
