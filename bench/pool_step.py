"""Where a batched step's time goes (prints figures; not a test).

    .venv/bin/python bench/pool_step.py [--rows 1,2,4,8,12,16] [--steps 300] [--stopped 0.75]

The shipped Transformer as the server serves it (input-major, fp16 copies, recorded graphs), on one
thread as a stepper process runs it, in three parts:

1. A pool (models/serving/batch.py) held at N sentences for --steps steps: a validation sentence
   joins as soon as one leaves, and --stopped of them are told to stop after 1-6 steps, as a typing
   reader's next key stops the sentence before it. Per step, the mean of each part of the work in
   milliseconds (the parts add up to about the whole): the decoding step itself (the recorded
   graph), encoding the sentences that join, the bookkeeping of the rows' tensors (taking the
   leaving rows out, padding the joining rows in), the argmax, and the per-row Python of a step
   (each row's pieces and, at its end, its maps).
2. The tied output projection (8000 x 256, the step's largest product) as fbgemm's fp16 product
   with N rows: microseconds and GFLOP/s. Where the rate stops growing with N, a step's products
   are bound by arithmetic, not by reading the weights.
3. K sentences encoded one pass each against one padded pass (what `Pool.join` does for the
   sentences joining at one step), median of random validation groups.
"""

from __future__ import annotations

import argparse
import collections
import itertools
import random
import statistics
import time
import warnings
from pathlib import Path

import torch

import models.serving.batch as batch
from models.checkpoint import load
from models.data import load_split
from models.serving import served
from models.serving.batch import Pool, Sentence
from models.tokenizer import PAD_ID, BPETokenizer

ROOT = Path(__file__).resolve().parent.parent
PARTS = {"decode": (Pool, "_decode"), "encode": (Pool, "_encoded"), "argmax": (batch, "greedy_choices"),
         "rows' tensors": [(Pool, "_leave"), (batch, "_joined"), (Pool, "_joined_cache")],
         "per-row Python": [(batch, "_advance"), (batch, "_stopped")]}


def timed_parts() -> dict[str, float]:
    """Wrap each part's functions so that their time adds up in the returned dict (seconds)."""
    spent: dict[str, float] = collections.defaultdict(float)
    for part, places in PARTS.items():
        for owner, name in places if isinstance(places, list) else [places]:
            original = getattr(owner, name)

            def wrapper(*args, original=original, part=part, **kwargs):
                began = time.perf_counter()
                try:
                    return original(*args, **kwargs)
                finally:
                    spent[part] += time.perf_counter() - began
            setattr(owner, name, wrapper)
    return spent


def held_pool(model, sources, rows: int, steps: int, stopped: float, spent: dict) -> dict[str, float]:
    """Milliseconds per step of each part, a pool held at `rows` sentences (means over `steps` steps
    after a warm-up of 3 * rows, while the rows spread over positions)."""
    rng, pool, texts = random.Random(0), Pool(model), itertools.cycle(sources)
    per_step: dict[str, list[float]] = collections.defaultdict(list)
    for n in range(3 * rows + steps):
        spent.clear()
        began = time.perf_counter()
        missing = rows - len(pool)
        if missing:  # while warming up at most two a step, so that the rows sit at several positions
            pool.join([_sentence(next(texts), rng, stopped) for _ in range(min(missing, 2) if n < 3 * rows
                                                                             else missing)])
        pool.step()
        if n >= 3 * rows:
            per_step["whole"].append(time.perf_counter() - began)
            for part in PARTS:
                per_step[part].append(spent.get(part, 0.0))
    return {part: statistics.fmean(times) * 1e3 for part, times in per_step.items()}


def _sentence(ids: list[int], rng: random.Random, stopped: float) -> Sentence:
    asked, limit, cut = [0], rng.randint(1, 6), rng.random() < stopped

    def stop() -> bool:
        asked[0] += 1
        return cut and asked[0] > limit
    return Sentence(ids, 40, stop, keep=True)


def projection_rates(model, rows: list[int]) -> list[tuple[int, float, float]]:
    """(rows, microseconds, GFLOP/s) of the output projection's fp16 product."""
    weight = model.embed.weight.detach().float().contiguous()  # (V, d), tied
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=r"fbgemm_\w+ is deprecated", category=UserWarning)
        packed, bias = torch.fbgemm_pack_gemm_matrix_fp16(weight), torch.zeros(weight.size(0))
        out = []
        for n in rows:
            x = torch.randn(n, weight.size(1))
            seconds = _median(lambda x=x: torch.fbgemm_linear_fp16_weight(x, packed, bias), 200)
            out.append((n, seconds * 1e6, 2 * n * weight.numel() / seconds / 1e9))
    return out


def encoding_ratios(model, sources, groups: list[int]) -> list[tuple[int, float, float]]:
    """(K, ms one pass each, ms one padded pass) for random groups of K sentences."""
    rng, out = random.Random(1), []
    for k in groups:
        alone, together = [], []
        for _ in range(150):
            group = rng.sample(sources, k)
            width = max(map(len, group))
            src = torch.tensor([ids + [PAD_ID] * (width - len(ids)) for ids in group])
            began = time.perf_counter()
            for ids in group:
                model.encode_with_internals(torch.tensor([ids]))
            middle = time.perf_counter()
            model.encode_with_internals(src)
            alone.append(middle - began)
            together.append(time.perf_counter() - middle)
        out.append((k, statistics.median(alone) * 1e3, statistics.median(together) * 1e3))
    return out


def _median(call, times: int) -> float:
    for _ in range(10):
        call()
    spans = []
    for _ in range(times):
        began = time.perf_counter()
        call()
        spans.append(time.perf_counter() - began)
    return statistics.median(spans)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", default="1,2,4,8,12,16", help="comma-separated numbers of sentences")
    parser.add_argument("--steps", type=int, default=300, help="steps measured per number of sentences")
    parser.add_argument("--stopped", type=float, default=0.75, help="share of sentences stopped early")
    args = parser.parse_args()
    rows = [int(n) for n in args.rows.split(",")]
    torch.set_num_threads(1)  # a stepper process's one lane
    model = served(load(ROOT / "checkpoints" / "transformer").requires_grad_(False), "input-major",
                   "fp16-weights", "graph")
    tokenizer = BPETokenizer.load(ROOT / "checkpoints" / "tokenizer.json")
    sources = [tokenizer.encode(pair.fr) for pair in load_split().valid[:400]]
    with torch.inference_mode():
        spent = timed_parts()
        print(f"1. a pool held at N sentences ({args.stopped:.0%} stopped after 1-6 steps): ms per step")
        print(f"{'N':>3} {'whole':>6} {'/ N':>6} " + " ".join(f"{part:>14}" for part in PARTS))
        for n in rows:
            got = held_pool(model, sources, n, args.steps, args.stopped, spent)
            print(f"{n:>3} {got['whole']:>6.2f} {got['whole'] / n:>6.3f} "
                  + " ".join(f"{got[part]:>14.3f}" for part in PARTS))
        print("\n2. the output projection (fp16 product, 8000 x 256) with N rows")
        for n, micro, rate in projection_rates(model, rows):
            print(f"{n:>3} {micro:>8.1f} us {rate:>6.1f} GFLOP/s")
        print("\n3. K sentences encoded: one pass each, one padded pass (ms)")
        for k, alone, together in encoding_ratios(model, sources, [2, 3, 4, 8]):
            print(f"{k:>3} {alone:>6.2f} {together:>6.2f}  together / alone {together / alone:.2f}")


if __name__ == "__main__":
    main()
