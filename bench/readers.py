"""How many typing readers one replica holds (prints figures; not a test).

    .venv/bin/python bench/readers.py                          # 1, 8, 16, 32, 48, 64 readers, 40 s each
    .venv/bin/python bench/readers.py --readers 1,64,128 --seconds 30 --json /tmp/readers.json
    .venv/bin/python bench/readers.py --url http://127.0.0.1:8000          # a running server
    .venv/bin/python bench/readers.py --where top,bottleneck,spread,all --readers 8,32,64  # where they read
    .venv/bin/python bench/readers.py --where bottleneck --readers 8 --kill-stepper 10  # a stepper killed
    .venv/bin/python bench/readers.py --where bottleneck --readers 8 --seconds 15 --at-start  # at start-up

Each simulated reader does what the page does (static/js/speculate.js, requests.js, the chapters):
it is somewhere on the page (--where: "top", the first screen; "bottleneck", that chapter's five
cards; "spread", a chapter drawn per sentence, the bottleneck and attention chapters twice as often;
"all", every model at every key wherever the reader is, as the page asked before it asked only for
what is on screen), types a French sentence one key every 120-260 ms, and at every key sends one
POST /api/compare for the models on its screen (the first screen's, the Transformer; the bottleneck
chapter's cards: every model; the attention chapter's grids: the attention LSTMs; the heads chapter:
the Transformer) with the page's X-Supersede-Key (one per reader), the previous one dropped (its
connection closed, as the browser's abort does), except while a 503 or 429's Retry-After runs (then
nothing is sent); after the last key and the page's pause (70 ms), the requests of the chapter in
view (the recurrence, the gradients at the page's length, the scores for each attention LSTM, the
scaling, the order, the heads, the four sub-layer translations, the two predictions, the recap, or
nothing for the chapters that ask nothing more); then it reads for 2-5 s before the next sentence.
The latency of a sentence is from its last keystroke to its last answer (the last compare line and
every chapter answer). A sentence fails when any of its last answers is not a 200 (a 503 or 429
included; the page would ask again after its Retry-After) or a compare line is an error.
Meanwhile a prober asks GET /api/health twice a second, as an orchestrator's probe does, and reads
GET /metrics.

Printed per number of readers: sentences, p50/p95/p99 latency, failures by cause (a refusal
without a Retry-After is counted apart), requests per second, the slowest health answer, the
model requests in flight on average (GET /metrics, the autoscaler's signal), the load generator's
own CPU (its share of the machine), per model the sentences stepped together and their wait for a
first step, the share of the sentences started that were stopped before their end (their reader
typed on: work nobody saw), and then the most readers held at p95 <= 250 ms with none
failed. The readers start staggered over their first 2 s; each level runs
on the same server, after the previous one's readers have stopped.

The server started here is `make serve`'s, one process; --workers 2 starts two, each answering for
itself: GET /metrics is answered by whichever process takes the scrape, so with two the figures read
from it (in flight, sentences per step) are one process's.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import secrets
import signal
import statistics
import time
from collections import Counter
from pathlib import Path

import httpx
from serving import ROOT, commands, serve, write_report  # bench/serving.py: this script's folder is on sys.path

from app import chapters

# `make serve`'s uvicorn limits (Makefile UVICORN_LIMITS), as uvicorn's own environment variables
UVICORN_LIMITS = {"UVICORN_HTTP": "app.serving:H11", "UVICORN_TIMEOUT_KEEP_ALIVE": "5",
                  "UVICORN_LIMIT_CONCURRENCY": "1024", "UVICORN_BACKLOG": "256", "MALLOC_ARENA_MAX": "2"}
# every simulated reader asks from this one address: no per-client shares (app/runtime/shares.py),
# which would count them all as one client; a server given with --url keeps its own setting
SERVER_ENV = {**UVICORN_LIMITS, "ATTENTION_LAB_SHARES": "false"}
WORKERS = 1  # `make serve`'s server processes (Makefile WORKERS)
SUBJECTS = ["Je", "Tu", "Il", "Elle", "Nous", "Vous", "Ils", "Mon frère", "La voisine", "Le professeur"]
VERBS = ["mange", "regarde", "cherche", "aime", "prépare", "oublie", "achète", "lit"]
OBJECTS = ["du pain", "une pomme", "le journal", "la lettre", "un livre", "les clés", "ce film", "la soupe"]
ENDINGS = [".", " ce matin.", " avant la nuit.", " dans le jardin.", " avec ses amis.", " depuis hier.",
           " parce qu'il pleut.", " tous les jours à Paris."]
KEY_MS = (120, 260)  # a key every 120-260 ms
CONNECTIONS = 64  # per reader (see Reader)
READ_S = (2.0, 5.0)  # reading between sentences
PAUSE_S = 0.070  # the page's pause in typing (static/js/main.js PAUSE_MS)
HELD_P95_MS = 250
HEALTH_EVERY_S = 0.5
# the chapter in view while the reader types ("spread"): (chapter, weight); "top" is the first screen
CHAPTERS = [("top", 1), *((c.slug, 2 if c.slug in ("bottleneck", "attention") else 1)
                          for c in chapters.CHAPTERS)]
WHERE = {"top": [("top", 1)], "bottleneck": [("bottleneck", 1)], "spread": CHAPTERS, "all": CHAPTERS}


def models_per_key(chapter: str, page: dict, where: str) -> list[str]:
    """The models a key asks for (static/js/requests.js onScreen): the first screen's, and those of
    the per-model views on the screen; every model when the page asks for all ("all")."""
    if where == "all" or chapter == "bottleneck":
        return page["names"]
    first = [page["heads"]] if page["heads"] else page["names"][-1:]
    shown = page["aligning"] if chapter == "attention" else []
    return [name for name in page["names"] if name in set(first + shown)]


def sentence(rng: random.Random) -> str:
    return f"{rng.choice(SUBJECTS)} {rng.choice(VERBS)} {rng.choice(OBJECTS)}{rng.choice(ENDINGS)}"


def chapter_asks(chapter: str, text: str, page: dict) -> list[tuple[str, dict]]:
    """The requests chapter `chapter`'s view makes for `text` after the pause (as the page makes them)."""
    d = page["defaults"]
    asks = {
        "recurrence": [("/api/recurrence", {"text": text})],
        "gradients": [("/api/gradients", {"text": text, "length": d["length"], "initialized": True,
                                          "factors": True})],
        "attention": [("/api/scores", {"text": text, "model": m, "row": 0, "temperature": 1})
                      for m in page["aligning"]],
        "scaling": [("/api/scaling", {"text": text})],
        "order": [("/api/order", {"text": text, "seed": d["seed"]})],
        "heads": [("/api/heads", {"text": text, "model": page["heads"], "heads_off": []})]
        if page["heads"] else [],
        "room": [("/api/translate", {"text": text, "model": page["heads"], "sublayers_off": off})
                 for off in ([], ["feed_forward"], ["residual_attention"], ["residual_feed_forward"])]
        if page["heads"] else [],
        "prediction": [("/api/predict", {"text": text, "model": page["heads"], "prefix": [],
                                         "top_k": d["top_k"], "beam_size": 1})] * 2 if page["heads"] else [],
        "point": [("/api/recap", {"text": text})],
    }
    return asks.get(chapter, [])


CHAPTER_ASKS = chapter_asks  # kept for `experiment` when --typing-only drops the readers' asks


class Reader:
    def __init__(self, index: int, url: str, page: dict, seed: int, where: str):
        self.rng = random.Random(seed * 1000 + index)
        self.where = where
        self.models: list[str] = []  # what a key asks for where the reader is now
        self.keys = self.asked = 0  # compares sent, and the models they asked for
        # a browser opens at most 6 connections to a host and frees an aborted request's at once; httpx's
        # pool can keep counting a request cancelled mid-exchange as holding its connection, and against a
        # server that answers within the time between two keys such leftovers filled all 6 and stopped
        # the reader for 30 s (PoolTimeout), so the pool has room beyond the browser's 6
        self.client = httpx.AsyncClient(base_url=url, timeout=30,
                                        limits=httpx.Limits(max_connections=CONNECTIONS))
        self.page = page
        self.key = secrets.token_hex(16)  # the page's X-Supersede-Key: one per visit
        self.latencies: list[float] = []
        self.failures: Counter = Counter()
        self.requests = 0
        self.quiet_until = 0.0  # perf_counter() before which nothing is sent (a Retry-After)

    async def compare(self, text: str) -> str | None:
        """The compare stream for `text`, read to its end: None, or why it failed."""
        self.requests += 1
        self.keys += 1
        self.asked += len(self.models)
        async with self.client.stream("POST", "/api/compare", json={"text": text, "models": self.models},
                                      headers={"X-Supersede-Key": self.key}) as response:
            if response.status_code != 200:
                return self.refused("compare", response)
            lines = [line async for line in response.aiter_lines() if line.strip()]
        return "compare line error" if any('"error"' in line for line in lines) else None

    def refused(self, what: str, response: httpx.Response) -> str:
        """Why `response` failed; a 429 or 503's Retry-After starts the page's quiet time."""
        retry = response.headers.get("Retry-After")
        if response.status_code in (429, 503):
            if retry is None:
                return f"{what} {response.status_code} without Retry-After"
            self.quiet_until = max(self.quiet_until, time.perf_counter() + float(retry))
        return f"{what} {response.status_code}"

    async def ask(self, path: str, body: dict) -> str | None:
        self.requests += 1
        response = await self.client.post(path, json=body)
        return None if response.status_code == 200 else self.refused(path, response)

    async def still_quiet(self) -> str:
        return "compare not sent (Retry-After)"

    async def sentence(self, until: float) -> None:
        words = sentence(self.rng)
        places = WHERE[self.where]
        chapter = self.rng.choices([c for c, _ in places], [w for _, w in places])[0]
        self.models = models_per_key(chapter, self.page, self.where)
        asked, pending = "", None
        for end in range(1, len(words) + 1):
            text = words[:end].strip()
            if text and text != asked:
                asked, last_key = text, time.perf_counter()
                if pending is not None:
                    pending.cancel()  # superseded: its connection is closed, as the browser's abort does
                quiet = last_key < self.quiet_until
                pending = asyncio.create_task(self.still_quiet() if quiet else self.compare(text))
            if end == len(words):
                break  # the last key: no wait for a next one (the latency runs from here)
            await asyncio.sleep(self.rng.uniform(*KEY_MS) / 1000)
            if time.perf_counter() > until:
                if pending is not None:
                    pending.cancel()
                return  # the level ended mid-sentence: not counted
        await asyncio.sleep(max(0.0, last_key + PAUSE_S - time.perf_counter()))
        asks = [self.ask(path, body) for path, body in chapter_asks(chapter, asked, self.page)]
        try:
            outcomes = await asyncio.gather(pending, *asks)
        except (httpx.HTTPError, OSError) as error:
            outcomes = [type(error).__name__]
        why = next((o for o in outcomes if o), None)
        if why:
            self.failures[why] += 1
        else:
            self.latencies.append((time.perf_counter() - last_key) * 1000)

    async def run(self, until: float) -> None:
        await asyncio.sleep(self.rng.uniform(0, 2))
        try:
            while time.perf_counter() < until:
                await self.sentence(until)
                await asyncio.sleep(self.rng.uniform(*READ_S))
        finally:
            await self.client.aclose()


def percentile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    return statistics.quantiles(values, n=100, method="inclusive")[q - 1] if len(values) > 1 else values[0]


# the GET /metrics series `grown` reads, each labelled by model or by reason
SERIES = ("model_batch_size_sum", "model_batch_size_count", "model_first_step_seconds_sum",
          "model_first_step_seconds_count", "model_dropped_total")


def grown(first: str, last: str) -> dict[tuple[str, str], float]:
    """(series, its label's value) -> how much it grew between two GET /metrics texts (SERIES only)."""
    def series(text: str) -> dict[tuple[str, str], float]:
        found = {}
        for line in text.splitlines():
            for name in SERIES:
                if line.startswith(f"attention_lab_{name}{{"):
                    found[name, line.split('"')[1]] = float(line.split()[-1])
        return found

    a, b = series(first), series(last)
    return {key: b[key] - a.get(key, 0.0) for key in b}


def stepped(grew: dict[tuple[str, str], float]) -> dict[str, dict[str, float]]:
    """Per model, from `grown`: sentences decoded per step on average (stepped together:
    docs/SERVER.md) and the mean wait for a sentence's first step, in ms."""
    out = {}
    for (name, model), steps in grew.items():
        if name == "model_batch_size_count" and model and steps:
            waits = grew.get(("model_first_step_seconds_count", model), 0)
            out[model] = {"rows_per_step": grew[("model_batch_size_sum", model)] / steps,
                          "first_step_ms": 1000 * grew.get(("model_first_step_seconds_sum", model), 0) / waits
                          if waits else None}
    return out


def cut_short(grew: dict[tuple[str, str], float]) -> dict[str, float] | None:
    """From `grown`: the sentences that took a first step (every model), and of them the share
    stopped before their end (their reader typed on, or left), each having cost its encoding and its
    steps; the sentences skipped before their first step cost nothing."""
    started = sum(n for (name, _), n in grew.items() if name == "model_first_step_seconds_count")
    if not started:
        return None
    return {"started": started, "stopped_share": grew.get(("model_dropped_total", "stopped"), 0.0) / started,
            "skipped": grew.get(("model_dropped_total", "skipped"), 0.0)}


async def probe(url: str, until: float) -> tuple[list[float | None], list[float], dict]:
    """Every HEALTH_EVERY_S until `until`: GET /api/health, each answer's seconds (None: not a 200),
    and GET /metrics's model requests in flight (what the autoscaler reads, deploy/README.md); and
    per model the sentences stepped together and their wait for a first step (`stepped`), and how
    many of them were stopped before their end (`cut_short`)."""
    health: list[float | None] = []
    in_flight: list[float] = []
    async with httpx.AsyncClient(base_url=url, timeout=30) as client:
        first = last = (await client.get("/metrics")).text
        while time.perf_counter() < until:
            began = time.perf_counter()
            response = await client.get("/api/health")
            health.append(time.perf_counter() - began if response.status_code == 200 else None)
            metrics = last = (await client.get("/metrics")).text
            in_flight += [float(line.split()[-1]) for line in metrics.splitlines()
                          if line.startswith("attention_lab_requests_in_flight ")]
            await asyncio.sleep(max(0.0, HEALTH_EVERY_S - (time.perf_counter() - began)))
    grew = grown(first, last)
    return health, in_flight, (stepped(grew), cut_short(grew))


async def experiment(url: str, page: dict, until: float, seed: int) -> list[float]:
    """The gradients chapter's experiment asked again and again until `until`, each on a new sentence (so never
    from the cache), as a reader of the gradients chapter would: the seconds each took (a refusal waits out its
    Retry-After and is not counted)."""
    rng, took = random.Random(seed), []
    async with httpx.AsyncClient(base_url=url, timeout=120) as client:
        while time.perf_counter() < until:
            path, body = CHAPTER_ASKS("gradients", sentence(rng), page)[0]
            began = time.perf_counter()
            response = await client.post(path, json=body)
            if response.status_code == 200:
                took.append(time.perf_counter() - began)
            else:
                await asyncio.sleep(float(response.headers.get("retry-after", 1)))
    return took


def stepper_processes() -> list[int]:
    """The stepper processes on this machine (`python -m app.runtime.stepper_child`), by id."""
    return sorted(pid for pid, command in commands().items()
                  if any(word.startswith(b"app.runtime.stepper") for word in command))


async def kill_stepper(url: str, after: float, until: float) -> dict | None:
    """`after` seconds on, one stepper process of the server killed outright (SIGKILL, as the
    kernel's out-of-memory killer does); then GET /api/health every 50 ms until every process is
    ready again: how long that took (None: not before `until`)."""
    await asyncio.sleep(after)
    victims = stepper_processes()
    if not victims:
        return None
    os.kill(victims[0], signal.SIGKILL)
    killed = time.perf_counter()
    async with httpx.AsyncClient(base_url=url, timeout=10) as client:
        while time.perf_counter() < until:
            await asyncio.sleep(0.05)
            stepping = (await client.get("/api/health")).json().get("stepping") or {}
            if time.perf_counter() - killed > 0.5 and stepping.get("ready") == stepping.get("processes"):
                return {"pid": victims[0], "ready_again_s": time.perf_counter() - killed}
    return {"pid": victims[0], "ready_again_s": None}


async def level(url: str, page: dict, readers: int, seconds: float, seed: int, where: str,
                with_experiment: bool = False, kill_after: float | None = None) -> dict:
    until = time.perf_counter() + seconds
    crowd = [Reader(i, url, page, seed, where) for i in range(readers)]
    cpu0, wall0 = time.process_time(), time.perf_counter()
    extra = [experiment(url, page, until, seed)] if with_experiment else []
    killing = asyncio.create_task(kill_stepper(url, kill_after, until)) if kill_after is not None else None
    (health, in_flight, (steps, cut)), *rest = await asyncio.gather(probe(url, until), *extra,
                                                             *(r.run(until) for r in crowd))
    killed = await killing if killing is not None else None
    cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
    latencies = [x for r in crowd for x in r.latencies]
    failures = sum((r.failures for r in crowd), Counter())
    keys = sum(r.keys for r in crowd)
    per_key = sum(r.asked for r in crowd) / keys if keys else None
    return {"where": where, "readers": readers, "models_per_key": per_key,
            "sentences": len(latencies) + sum(failures.values()),
            "p50_ms": percentile(latencies, 50), "p95_ms": percentile(latencies, 95),
            "p99_ms": percentile(latencies, 99), "failed": sum(failures.values()), "failures": dict(failures),
            "requests_per_s": sum(r.requests for r in crowd) / wall,
            "health_max_s": None if None in health or not health else max(health),
            "health_failed": health.count(None),
            "in_flight_mean": statistics.fmean(in_flight) if in_flight else None, "stepped": steps,
            "cut_short": cut,
            "experiment_s": statistics.median(rest[0]) if extra and rest[0] else None,
            "stepper_killed": killed,
            "generator_cpu_share": cpu / wall / (os.cpu_count() or 1)}


def read_page(url: str) -> dict:
    """What a reader's page learns at load: the defaults and which model does what."""
    health = httpx.get(f"{url}/api/health", timeout=30).json()
    models = httpx.get(f"{url}/api/models", timeout=30).json()
    heads = next((m["name"] for m in models if "encoder" in m["attention_kinds"]), None)
    return {"defaults": health["defaults"], "names": [m["name"] for m in models],
            "aligning": [m["name"] for m in models if m["recurrent"] and m["cross_attention"]], "heads": heads}


def show(row: dict) -> None:
    fmt = lambda x: "-" if x is None else f"{x:.0f}"  # noqa: E731
    fmt1 = lambda x: "-" if x is None else f"{x:.1f}"  # noqa: E731
    health = "-" if row["health_max_s"] is None else f"{1000 * row['health_max_s']:.0f} ms"
    if row["health_failed"]:
        health += f" ({row['health_failed']} not 200)"
    print(f"{row['where']:>6}, {row['readers']:>4} readers, {fmt1(row['models_per_key'])} models a key: "
          f"{row['sentences']:>4} sentences, p50 {fmt(row['p50_ms']):>5} ms, "
          f"p95 {fmt(row['p95_ms']):>5} ms, p99 {fmt(row['p99_ms']):>5} ms, failed {row['failed']:>3} "
          f"{row['failures'] or ''}, {row['requests_per_s']:.0f} requests/s, health at most {health}, "
          f"{fmt1(row['in_flight_mean'])} in flight on average, "
          f"load generator {100 * row['generator_cpu_share']:.0f}% of the machine", flush=True)
    if row.get("experiment_s") is not None:
        print(f"        the gradients chapter's experiment meanwhile: median {row['experiment_s']:.2f} s",
              flush=True)
    if row.get("stepper_killed"):
        again = row["stepper_killed"]["ready_again_s"]
        print("        a stepper process killed: every process ready again after "
              + ("- (not within the level)" if again is None else f"{again:.1f} s"), flush=True)
    if row.get("stepped"):
        print("        sentences per step (first step's mean wait): " + ", ".join(
            f"{model} {s['rows_per_step']:.1f} ({fmt1(s['first_step_ms'])} ms)"
            for model, s in sorted(row["stepped"].items())), flush=True)
    if row.get("cut_short"):
        cut = row["cut_short"]
        print(f"        sentences started: {cut['started']:.0f}, stopped before their end "
              f"{100 * cut['stopped_share']:.0f}%; skipped unstarted: {cut['skipped']:.0f}", flush=True)


def held(rows: list[dict], where: str) -> int:
    return max((r["readers"] for r in rows if r["where"] == where and "p95_ms" in r
                if r["failed"] == 0 and r["p95_ms"] is not None and r["p95_ms"] <= HELD_P95_MS), default=0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--readers", default="1,8,16,32,48,64", help="comma-separated numbers of readers")
    parser.add_argument("--seconds", type=float, default=40, help="per number of readers")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--where", default="spread",
                        help="where the readers are, comma-separated: top, bottleneck, spread, all (all "
                             "models a key)")
    parser.add_argument("--typing-only", action="store_true",
                        help="only the compares of typing, no chapter's requests after the pause")
    parser.add_argument("--experiment", action="store_true",
                        help="also ask the gradients chapter's experiment over and over during each level, "
                             "and alone first")
    parser.add_argument("--kill-stepper", type=float, metavar="SECONDS",
                        help="this far into each level, kill one stepper process outright (SIGKILL); "
                             "print how long until every process is ready again")
    parser.add_argument("--url", help="a running server (default: start one as `make serve` does)")
    parser.add_argument("--at-start", action="store_true",
                        help="readers come as soon as the server answers health, while its start-up work "
                             "(the stepper processes loading, the answers computed ahead) runs")
    parser.add_argument("--root", type=Path, default=ROOT,
                        help="serve the app of this checkout (e.g. a worktree of an earlier commit)")
    parser.add_argument("--workers", type=int, default=WORKERS,
                        help=f"processes of the server started here (default {WORKERS}, as `make serve`)")
    parser.add_argument("--json", help="also write the figures here")
    args = parser.parse_args()
    counts = [int(n) for n in args.readers.split(",")]
    places = args.where.split(",")
    if any(where not in WHERE for where in places):
        parser.error(f"--where: each of {', '.join(WHERE)}")
    if args.typing_only:  # nothing asked after the pause: the chapter asks are dropped
        globals()["chapter_asks"] = lambda *_: []

    def measure(url: str) -> list[dict]:
        page = read_page(url)
        rows = []
        if args.experiment:
            idle = asyncio.run(experiment(url, page, time.perf_counter() + 15, args.seed + 1))
            rows.append({"where": "alone", "readers": 0, "experiment_s": statistics.median(idle)})
            print(f"the gradients chapter's experiment alone: median {rows[-1]['experiment_s']:.2f} s of "
                  f"{len(idle)}",
                  flush=True)
        for where in places:
            for readers in counts:
                rows.append(asyncio.run(level(url, page, readers, args.seconds, args.seed, where,
                                              args.experiment, args.kill_stepper)))
                show(rows[-1])
        return rows

    if args.url:
        rows = measure(args.url.rstrip("/"))
    else:
        with serve(env={**SERVER_ENV, "UVICORN_WORKERS": str(args.workers)}, root=args.root) as url:
            if not args.at_start:
                # the default sentence's answers computed ahead (by every process), as a replica has them
                time.sleep(10 * max(1, args.workers))
            rows = measure(url)
    held_by_place = {where: held(rows, where) for where in places}
    for where, most in held_by_place.items():
        print(f"held at p95 <= {HELD_P95_MS} ms with none failed, readers at {where}: {most} typing readers")
    write_report(args.json, {"levels": rows, "held_readers": held_by_place, "p95_target_ms": HELD_P95_MS,
                             "typing_only": args.typing_only,
                             "seconds_per_level": args.seconds, "cpus": os.cpu_count(),
                             "workers": None if args.url else args.workers})


if __name__ == "__main__":
    main()
