"""What a live training run (POST /api/train) costs the rest of the server (not a test: it prints
figures).

    .venv/bin/python bench/live.py --json bench/results/live.json

On a fresh server on the shipped checkpoints:
1. /api/translate (Transformer, greedy) on --sentences unseen sentences, one after another, idle:
   its median;
2. a default run (POST /api/train with {}) streaming to one client while the same kind of requests
   (other sentences) are asked one after another: translate's median during the run, over its
   median idle (target <= 1.5), /api/health's slowest answer during the run (target < 1 s), the run's
   wall time, its final accuracies and the process's peak resident memory (the server reports it);
3. a second default run whose client hangs up after the first progress line: the time from the
   hang-up until the training process is gone (target < 1 s).
"""

from __future__ import annotations

import argparse
import json
import statistics
import threading
import time

import httpx
from serving import live_processes, serve, write_report  # bench/serving.py

SENTENCES = [
    "Je voudrais un café.", "Il fait froid ce matin.", "Où est la bibliothèque ?", "Nous partons demain.",
    "Elle lit un livre.", "Tu as oublié tes clés.", "Mon frère travaille ici.", "Les enfants jouent.",
    "Le train arrive bientôt.", "Pourquoi ris-tu ?", "J'ai perdu mon parapluie.", "Ma sœur chante bien.",
    "Il pleut depuis hier.", "Les magasins ferment tôt.", "Je cherche mes lunettes.", "Le chat dort.",
    "Vous parlez trop vite.", "Ils ont gagné le match.", "Nous avons visité Paris.", "Elle a une voiture.",
]


def translate_ms(http: httpx.Client, url: str, text: str) -> float:
    began = time.perf_counter()
    response = http.post(f"{url}/api/translate", json={"text": text, "model": "transformer"})
    response.raise_for_status()
    return (time.perf_counter() - began) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--json", help="also write the figures here")
    args = parser.parse_args()
    report: dict = {}
    with serve({"ATTENTION_LAB_CACHE_SIZE": "0"}) as url, httpx.Client(timeout=300) as http:
        for text in SENTENCES[:3]:  # warm-up
            translate_ms(http, url, text)
        idle = [translate_ms(http, url, text) for text in SENTENCES]
        lines: list[dict] = []
        began = time.perf_counter()

        def train() -> None:
            with httpx.Client(timeout=300) as own, own.stream("POST", f"{url}/api/train", json={}) as response:
                for line in response.iter_lines():
                    if line:
                        lines.append(json.loads(line))

        runner = threading.Thread(target=train)
        runner.start()
        while not lines:
            time.sleep(0.05)
        busy, health, i = [], [], 0
        while runner.is_alive():
            busy.append(translate_ms(http, url, SENTENCES[i % len(SENTENCES)]))  # the cache is off
            t = time.perf_counter()
            http.get(f"{url}/api/health").raise_for_status()
            health.append((time.perf_counter() - t) * 1000)
            i += 1
        runner.join()
        wall = time.perf_counter() - began
        finals = {line["contestant"]: line for line in lines if line.get("done")}
        process = next(line["process"] for line in lines if "process" in line)
        before = live_processes()
        with httpx.Client(timeout=60) as own, own.stream("POST", f"{url}/api/train", json={}) as response:
            lines_left = response.iter_lines()  # held: dropping it would close the stream at once
            next(lines_left)
            running = live_processes() - before
            assert len(running) == 1, "the run's process was not found"
        hung_up = time.perf_counter()
        while live_processes() & running and time.perf_counter() - hung_up < 10:
            time.sleep(0.01)
        gone_ms = (time.perf_counter() - hung_up) * 1000
        report = {
            "translate_idle_ms": statistics.median(idle), "translate_during_run_ms": statistics.median(busy),
            "during_over_idle": statistics.median(busy) / statistics.median(idle),
            "requests_during_run": len(busy),
            "health_slowest_ms": max(health), "run_wall_s": wall, "peak_resident_mb": process["peak_mb"],
            "final": {name: {k: f[k] for k in ("accuracy", "token_accuracy", "step", "seconds", "stopped_by")}
                      for name, f in finals.items()},
            "summary": next(line["summary"] for line in lines if line.get("finished")),
            "hang_up_to_gone_ms": gone_ms,
        }
    print(json.dumps(report, indent=2))
    write_report(args.json, report)


if __name__ == "__main__":
    main()
