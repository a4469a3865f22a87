"""Batching across readers, in process (prints figures; not a test).

    .venv/bin/python bench/batching.py [--readers 2,4,8,16] [--rounds 7]

N readers' compares (each a different French text, all five shipped models, result cache off) are
queued while the model thread is busy, so they all join at its first step; the time from its release
to the last answer is measured with batching off (each compare's models side by side, each text on
its own) and on (the server's default: each model steps the N texts together, models/serving/batch.py,
docs/SERVER.md "Stepped together"). The two modes
alternate round by round on one registry (the setting is read when a compare is queued), and the
medians are printed with their ratio, off / on. It also counts the answers that differ between the
two modes as the API returns them (rounded JSON): translations, maps, and the map weights that
differ, with the largest difference relative to the weight.
"""

from __future__ import annotations

import argparse
import statistics
import threading
import time
from pathlib import Path

from app.runtime.loading import load_registry
from app.runtime.scheduler import INTERACTIVE
from app.services.comparison import _settled, queue_comparison

ROOT = Path(__file__).resolve().parent.parent
TEXTS = ["Je mange du pain.", "Où est la gare ?", "Il pleut depuis ce matin.", "Le chat noir dort sur le lit.",
         "Nous avons un chat et un chien.", "Tom ne sait pas nager.", "Elle lit un livre dans le jardin.",
         "Je ne sais pas pourquoi il est parti.", "Tu es en retard.", "Les enfants jouent dehors.",
         "Il fait très froid aujourd'hui.", "Mon frère habite à Paris.",
         "Je voudrais un café, s'il vous plaît.", "Nous partons demain matin.",
         "Ce livre est très intéressant.", "Où as-tu mis mes clés ?"]


def round_of(registry, texts: list[str], batching: bool) -> tuple[float, list[list[dict]]]:
    """One round: the texts' compares queued behind a busy model thread, then released."""
    worker = registry.jobs.thread
    worker.batching = batching
    release = threading.Event()
    busy = worker.submit(release.wait, 30, priority=INTERACTIVE)
    queued = [queue_comparison(registry, text) for text in texts]
    began = time.perf_counter()
    release.set()
    busy.result()
    answers = [[_settled(name, future).model_dump() for name, future in pending] for pending in queued]
    return time.perf_counter() - began, answers


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--readers", default="2,4,8,16", help="comma-separated numbers of queued compares")
    parser.add_argument("--rounds", type=int, default=7, help="rounds per mode and number")
    args = parser.parse_args()
    registry = load_registry(ROOT / "checkpoints", device="cpu", cache_size=0)
    try:
        round_of(registry, TEXTS[:2], True)  # first calls: allocations, lazy set-up
        round_of(registry, TEXTS[:2], False)
        print(f"{'readers':>7} {'off (ms)':>9} {'on (ms)':>8} {'off/on':>7}  answers differing (of)")
        for n in (int(x) for x in args.readers.split(",")):
            texts = [TEXTS[i % len(TEXTS)] + ("" if i < len(TEXTS) else f" {i}") for i in range(n)]
            times: dict[bool, list[float]] = {False: [], True: []}
            answers = {}
            for _ in range(args.rounds):
                for batching in (False, True):
                    seconds, answers[batching] = round_of(registry, texts, batching)
                    times[batching].append(seconds)
            off, on = (statistics.median(times[b]) for b in (False, True))
            pairs = [(a, b) for x, y in zip(answers[False], answers[True], strict=True)
                     for a, b in zip(x, y, strict=True)]
            translations = sum(a["translation"] != b["translation"] for a, b in pairs)
            maps = sum(a["maps"] != b["maps"] for a, b in pairs if a["maps"])
            with_maps = sum(bool(a["maps"]) for a, _ in pairs)
            values = [(x, y) for a, b in pairs for p, q in zip(a["maps"], b["maps"], strict=True)
                      for r, s in zip(p["weights"], q["weights"], strict=True)
                      for x, y in zip(r, s, strict=True)]
            moved = [abs(x - y) / max(abs(x), 1e-30) for x, y in values if x != y]
            print(f"{n:>7} {off * 1000:>9.0f} {on * 1000:>8.0f} {off / on:>7.2f}  translations {translations} "
                  f"({len(pairs)}), maps {maps} ({with_maps}); weights {len(moved)} of {len(values)}, "
                  f"by at most {max(moved, default=0):.1e} of their value")
    finally:
        registry.close()


if __name__ == "__main__":
    main()
