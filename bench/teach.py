"""Teaching a copy of a model one pair (POST /api/teach): how long, how well, and what it costs the
readers beside it (not a test: it prints figures).

    ATTENTION_LAB_DATA=/path/fra-eng-2017.zip .venv/bin/python bench/teach.py --json bench/results/teach.json

1. click to last line: on a fresh server on the shipped checkpoints, GET /api/teach (as the page asks
   when the experiment opens, which starts the run's process ahead), a pause, then POST /api/teach with
   30 steps; the seconds from the POST to the last line, --runs times per model, median (targets:
   lstm-additive <= 3 s, transformer <= 8 s), and the same with no process started ahead (cold);
2. typing readers beside a run: /api/translate (Transformer) on unseen sentences one after another,
   idle, then while runs go on back to back: p95 during over p95 alone (target <= 1.5);
3. in this process (models/teach.py, one thread): 20 test pairs whose target the shipped lstm-additive
   does not write (greedy), drawn from the test split outside the held-out set; after 30 steps, how
   many it writes (target >= 18);
4. the held-out BLEU lost, with and without rehearsal, on three example pairs.
"""

from __future__ import annotations

import argparse
import json
import statistics
import threading
import time
from pathlib import Path

import httpx
import torch
from live import SENTENCES, translate_ms  # bench/live.py
from serving import serve, write_report  # bench/serving.py

from models.data import load_split
from models.evaluate import translate_all
from models.teach import Loaded, TeachConfig, TeachEnd, TeachStep, teach

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = [
    ("Je mange du pain.", "I'm eating bread."),
    ("Le chat dort sur le lit.", "The cat sleeps on the bed."),
    ("Il pleut depuis hier.", "It has been raining since yesterday."),
]


def click_to_last_line(http: httpx.Client, url: str, model: str, warm: bool) -> float:
    if warm:
        http.get(f"{url}/api/teach").raise_for_status()
        time.sleep(4.0)  # the reader types the English meanwhile
    began = time.perf_counter()
    with http.stream(
        "POST",
        f"{url}/api/teach",
        json={"text": "Je mange du pain.", "target": "I'm eating bread.", "model": model, "steps": 30},
    ) as response:
        response.raise_for_status()
        last = [json.loads(line) for line in response.iter_lines() if line][-1]
    assert last["done"] and "error" not in last, last
    return time.perf_counter() - began


def served(runs: int) -> dict:
    report: dict = {}
    env = {"ATTENTION_LAB_CACHE_SIZE": "0", "ATTENTION_LAB_SHARES": "false"}
    with serve(env) as url, httpx.Client(timeout=120) as http:
        for model in ("lstm-additive", "transformer"):
            warm = [click_to_last_line(http, url, model, True) for _ in range(runs)]
            report[model] = {
                "warm_s": [round(s, 2) for s in warm],
                "median_s": round(statistics.median(warm), 2),
                "cold_s": round(click_to_last_line(http, url, model, False), 2),
            }
            print(model, report[model], flush=True)
        for text in SENTENCES[:3]:
            translate_ms(http, url, text)
        idle = [translate_ms(http, url, text) for text in SENTENCES * 2]
        going = threading.Event()
        going.set()

        def teaching() -> None:
            with httpx.Client(timeout=120) as own:
                while going.is_set():
                    click_to_last_line(own, url, "lstm-additive", False)

        runner = threading.Thread(target=teaching)
        runner.start()
        time.sleep(3.0)
        busy = [translate_ms(http, url, text) for text in SENTENCES * 2]
        going.clear()
        runner.join()
        p95 = lambda xs: statistics.quantiles(xs, n=20)[-1]  # noqa: E731
        report["typing"] = {
            "idle_p95_ms": round(p95(idle), 1),
            "during_p95_ms": round(p95(busy), 1),
            "ratio": round(p95(busy) / p95(idle), 2),
        }
        print("typing", report["typing"], flush=True)
    return report


def learned(loaded: Loaded, pairs: int) -> dict:
    """The 20-pair check: test pairs the model gets wrong, each taught for 30 steps."""
    model = loaded.model("lstm-additive")
    held = {p.fr for p in loaded.pairs.held_out} | {p.fr for p in loaded.pairs.examples}
    candidates = [p for p in load_split().test if p.fr not in held and 3 <= len(p.fr.split()) <= 8][::7][:200]
    out = translate_all(model, loaded.tokenizer, [p.fr for p in candidates])
    wrong = [p for p, h in zip(candidates, out, strict=True) if h != p.en][:pairs]
    results = []
    for p in wrong:
        *steps, end = teach(model, loaded.tokenizer, TeachConfig(text=p.fr, target=p.en), loaded.pairs)
        results.append(
            {
                "source": p.fr,
                "target": p.en,
                "learned": steps[-1].learned,
                "learned_at": end.learned_at,
                "translation": steps[-1].reading.translation,
            }
        )
    return {"pairs": len(results), "learned": sum(r["learned"] for r in results), "rows": results}


def forgetting(loaded: Loaded) -> list[dict]:
    rows = []
    for text, target in EXAMPLES:
        for rehearsal in (False, True):
            lines = list(
                teach(
                    loaded.model("lstm-additive"),
                    loaded.tokenizer,
                    TeachConfig(text=text, target=target, rehearsal=rehearsal),
                    loaded.pairs,
                )
            )
            end = next(x for x in lines if isinstance(x, TeachEnd))
            last = [x for x in lines if isinstance(x, TeachStep)][-1]
            rows.append(
                {
                    "text": text,
                    "target": target,
                    "rehearsal": rehearsal,
                    "bleu_before": lines[0].before.bleu,
                    "bleu_after": end.after.bleu,
                    "bleu_change": end.bleu_change,
                    "learned_at": end.learned_at,
                    "final": last.reading.translation,
                }
            )
            print(rows[-1], flush=True)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--json", help="also write the figures here")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--pairs", type=int, default=20)
    parser.add_argument("--skip-server", action="store_true")
    args = parser.parse_args()
    report = {} if args.skip_server else served(args.runs)
    torch.set_num_threads(1)
    loaded = Loaded.read(ROOT / "checkpoints")
    report["forgetting"] = forgetting(loaded)
    report["learned"] = learned(loaded, args.pairs)
    print("learned", report["learned"]["learned"], "of", report["learned"]["pairs"], flush=True)
    write_report(args.json, report)


if __name__ == "__main__":
    main()
