"""Training speed of each shipped architecture on this machine, in target tokens per second.

    .venv/bin/python bench/bench_train.py [--steps 12] [--models transformer lstm ...]

Runs real training steps (forward, loss, backward, AdamW) on length-grouped batches of the
Tatoeba training split with the shipped model sizes and prints the median over steps, after a
warm-up step. Figures depend on what else the machine is doing: run it on a quiet machine.
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import torch

from models.architectures import MODEL_NAMES, build, count_parameters, default_config
from models.batches import collate, encode_pairs, token_batches
from models.data import load_split
from models.tokenizer import BPETokenizer
from models.train import TrainingSettings, loss_fn

ROOT = Path(__file__).resolve().parent.parent


def measure(name: str, pairs, batches, steps: int) -> tuple[int, float]:
    torch.manual_seed(0)
    settings = TrainingSettings()
    model = build(default_config(name, 8000)).train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    rates = []
    for idx in batches[: steps + 1]:
        batch = collate([pairs[i] for i in idx])
        start = time.perf_counter()
        loss = loss_fn(model(batch.src, batch.tgt_in).logits, batch.tgt_out, settings.label_smoothing)
        optimizer.zero_grad()
        (loss / batch.n_tokens).backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), settings.clip)
        optimizer.step()
        rates.append(batch.n_tokens / (time.perf_counter() - start))
    return count_parameters(model), statistics.median(rates[1:])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--steps", type=int, default=12)
    parser.add_argument("--models", nargs="*", default=list(MODEL_NAMES))
    args = parser.parse_args()
    tokenizer = BPETokenizer.load(ROOT / "checkpoints" / "tokenizer.json")
    pairs = encode_pairs(tokenizer, load_split().train[:20000], TrainingSettings().max_len)
    batches = token_batches(pairs, TrainingSettings().max_tokens, seed=0)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, batches of "
          f"<= {TrainingSettings().max_tokens} padded tokens")
    for name in args.models:
        params, rate = measure(name, pairs, batches, args.steps)
        print(f"{name:14s} {params:>10,d} parameters  {rate:8,.0f} target tokens/s (median)")


if __name__ == "__main__":
    main()
