"""Fair by client (prints figures; not a test): eight typing readers, each from an address of its own,
alone and then beside one client that floods the server with compares.

    .venv/bin/python bench/fairness.py                      # 8 readers, 30 s a phase, two rounds
    .venv/bin/python bench/fairness.py --readers 8 --seconds 40 --rounds 3 --in-flight 32
    .venv/bin/python bench/fairness.py --url http://127.0.0.1:8000   # a running server

The readers are bench/readers.py's, at the bottleneck chapter (every model at every key, the page's
X-Supersede-Key, reading 2-5 s between sentences), each naming its own address in X-Forwarded-For
(the server started here trusts 127.0.0.1 as its proxy, uvicorn's default, so each is a client of its
own, as app/clients.py counts clients). The flooding client, from another address, keeps
`--in-flight` compares of every model in flight, each on a fresh sentence (never from the cache) and
read to its end, the next sent as one ends. The phases alternate, "alone" then "flooded", for
`--rounds` rounds on one server, so each ratio is between phases of one run on one machine.

Printed per phase: the readers' sentences, p50 / p95 from a sentence's last key to its last answer,
their failures (any answer not a 200, or an error line), and the flooder's answers a second; then
the readers' p95 flooded over alone, round by round and over all phases (the target: at most 2x).
The server is `make serve`'s, one process, with every limit at its default.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import statistics
import time
from collections import Counter

import httpx
from readers import UVICORN_LIMITS, Reader, percentile, read_page, sentence  # bench/ is on sys.path
from serving import serve

FLOOD_ADDRESS = "10.2.0.1"


def reader_address(index: int) -> str:
    return f"10.1.{index // 250}.{index % 250 + 1}"


class OwnAddressReader(Reader):
    """A reader of bench/readers.py that names an address of its own, as a reader behind a proxy does."""

    def __init__(self, index: int, url: str, page: dict, seed: int):
        super().__init__(index, url, page, seed, "bottleneck")
        self.client.headers["X-Forwarded-For"] = reader_address(index)


async def flood(url: str, models: list[str], in_flight: int, until: float, seed: int) -> dict:
    """`in_flight` compares of `models` kept in flight from one address, each on a fresh sentence."""
    rng = random.Random(seed)
    answered, refused, failed = 0, 0, 0
    headers = {"X-Forwarded-For": FLOOD_ADDRESS}
    limits = httpx.Limits(max_connections=in_flight + 8)
    async with httpx.AsyncClient(base_url=url, timeout=60, limits=limits, headers=headers) as client:
        async def one_after_another(lane: int) -> None:
            nonlocal answered, refused, failed
            while time.perf_counter() < until:
                text = f"{sentence(rng)} {lane} {rng.randrange(10**9)}"  # never the cache's
                try:
                    body = {"text": text, "models": models}
                    async with client.stream("POST", "/api/compare", json=body) as r:
                        if r.status_code != 200:
                            refused += 1
                            await asyncio.sleep(float(r.headers.get("retry-after", 1)))
                            continue
                        async for line in r.aiter_lines():
                            if line.strip():
                                answered += 1
                                failed += '"error"' in line
                except (httpx.HTTPError, OSError):
                    failed += 1
        began = time.perf_counter()
        await asyncio.gather(*(one_after_another(i) for i in range(in_flight)))
        took = time.perf_counter() - began
    return {"answers_per_s": answered / took, "refused": refused, "failed_lines": failed}


async def phase(url: str, page: dict, readers: int, seconds: float, seed: int, flooding: int) -> dict:
    until = time.perf_counter() + seconds
    crowd = [OwnAddressReader(i, url, page, seed) for i in range(readers)]
    extra = [flood(url, page["names"], flooding, until, seed)] if flooding else []
    results = await asyncio.gather(*(r.run(until) for r in crowd), *extra)
    latencies = [x for r in crowd for x in r.latencies]
    failures = sum(sum(r.failures.values()) for r in crowd)
    row = {"phase": "flooded" if flooding else "alone", "sentences": len(latencies) + failures,
           "p50_ms": percentile(latencies, 50), "p95_ms": percentile(latencies, 95), "failed": failures,
           "failures": dict(sum((r.failures for r in crowd), Counter()))}
    if flooding:
        row |= results[-1]
    return row


def show(row: dict) -> None:
    line = (f"{row['phase']:>8}: {row['sentences']:4d} sentences, p50 {row['p50_ms'] or float('nan'):7.1f} ms,"
            f" p95 {row['p95_ms'] or float('nan'):7.1f} ms, failed {row['failed']}")
    if row["phase"] == "flooded":
        line += (f"; flooder {row['answers_per_s']:.1f} answers/s, {row['refused']} refused,"
                 f" {row['failed_lines']} error lines")
    print(line + (f"  {row['failures']}" if row["failures"] else ""), flush=True)


async def run(url: str, args) -> list[dict]:
    page = read_page(url)
    rows = []
    for round_ in range(args.rounds):
        for flooding in (0, args.in_flight):
            row = await phase(url, page, args.readers, args.seconds, args.seed + round_, flooding)
            row["round"] = round_ + 1
            show(row)
            rows.append(row)
    return rows


def summary(rows: list[dict]) -> None:
    for round_ in sorted({r["round"] for r in rows}):
        alone, flooded = (next(r for r in rows if r["round"] == round_ and r["phase"] == p)
                          for p in ("alone", "flooded"))
        if alone["p95_ms"] and flooded["p95_ms"]:
            print(f"round {round_}: p95 flooded / alone = {flooded['p95_ms'] / alone['p95_ms']:.2f}")
    ratios = [f["p95_ms"] / a["p95_ms"] for a, f in zip(rows[::2], rows[1::2], strict=True)
              if a["p95_ms"] and f["p95_ms"]]
    if ratios:
        print(f"median of the rounds' ratios: {statistics.median(ratios):.2f} (target <= 2);"
              f" readers' sentences failed: {sum(r['failed'] for r in rows)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--readers", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=30, help="per phase")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--in-flight", type=int, default=32, help="the flooding client's compares in flight")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--url", help="a running server (default: start one as `make serve` does)")
    parser.add_argument("--json", help="also write the figures here")
    args = parser.parse_args()
    if args.url:
        rows = asyncio.run(run(args.url, args))
    else:
        with serve(UVICORN_LIMITS, timeout=300) as url:
            rows = asyncio.run(run(url, args))
    summary(rows)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
