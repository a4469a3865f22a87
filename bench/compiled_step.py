"""Whether torch.compile would make the Transformer's decoding step faster (prints figures; not a test).

    .venv/bin/python bench/compiled_step.py [--steps 24] [--repeats 5] [--json bench/results/compiled_step.json]

The served step (models/serving/step.py) of the shipped Transformer, one intra-op thread, one
sentence, timed step by step as a greedy search runs it (the cache growing a position per step),
three ways, interleaved: the Python step on fp32 weights; the same function after torch.compile
(Inductor, dynamic shapes: the past keys grow at every step, so one compiled graph must serve every
length); and the step as the server runs it (fp16 copies of the weights, fbgemm's products, the
recorded graph). Printed: the time torch.compile took to compile (its first calls), the medians per
step, the compiled step over the Python one, the server's step over the compiled one, and the
largest difference of a logit between compiled and Python (Inductor may sum in another order).

Inductor cannot call fbgemm's fp16 products, so the compiled step reads fp32 weights: twice the
bytes of the server's. A compiled step only pays if it fuses enough of the step's small calls to
make up for that.
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch
from serving import ROOT, write_report  # bench/serving.py: this script's folder is on sys.path

from models import checkpoint
from models.serving import served
from models.serving.step import step


def stepper(model):
    """The served model's decoding step as one function of (x, cache, cross_kv)."""

    def decode_step(x, cache, cross_kv):
        self_ws, cross_ws, new_cache = [], [], []
        for i, w in enumerate(model.steps):
            x, sw, cw, kv = step(x, w, None if cache is None else cache[i], cross_kv[i])
            self_ws.append(sw)
            cross_ws.append(cw)
            new_cache.append(kv)
        logits, _ = model._outputs(x, self_ws, cross_ws)
        return logits, new_cache

    return decode_step


def per_step_ms(run, x, cross_kv, steps: int) -> list[float]:
    cache, times = None, []
    for _ in range(steps):
        start = time.perf_counter()
        _, cache = run(x, cache, cross_kv)
        times.append((time.perf_counter() - start) * 1e3)
    return times


def graph_run(model, piece: int = 1):
    """The server's step as a function of (x, cache, cross_kv), like the others: its graph starts at
    the embedding of the piece read, so it is given `piece` (the one x embeds) rather than x, and
    also counts the lookup the others are spared."""
    ids = torch.tensor([piece])

    def run(x, cache, cross_kv):
        position = 0 if cache is None else cache[0][0].size(2)
        logits, _, new_cache = model.graph(ids, position, cache, cross_kv)
        return logits, new_cache

    return run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=24, help="decoding steps per pass")
    parser.add_argument("--repeats", type=int, default=5, help="interleaved passes of each variant")
    parser.add_argument("--json", help="write the figures here")
    args = parser.parse_args()
    torch.set_num_threads(1)
    folder = ROOT / "checkpoints" / "transformer"
    fp32 = served(checkpoint.load(folder).requires_grad_(False), "input-major", "fp32", "python")
    server = served(checkpoint.load(folder).requires_grad_(False), "input-major", "fp16-weights", "graph")
    python_step = stepper(fp32)
    compiled = torch.compile(python_step, dynamic=True)
    src = torch.tensor([[5 + (i * 37) % 7000 for i in range(12)]])
    with torch.inference_mode():
        memory, served_memory = fp32.encode(src), server.encode(src)
        x = fp32._embed(torch.tensor([[1]]), 0).view(1, -1)
        start = time.perf_counter()
        per_step_ms(compiled, x, memory.cross_kv, 3)  # the first step, then a step with a past: compiled
        compile_s = time.perf_counter() - start
        _, cache = python_step(x, None, memory.cross_kv)
        difference = float((compiled(x, cache, memory.cross_kv)[0] - python_step(x, cache, memory.cross_kv)[0])
                           .abs().max())
        times = {"python_fp32": [], "compiled_fp32": [], "server": []}
        for _ in range(args.repeats):
            times["python_fp32"] += per_step_ms(python_step, x, memory.cross_kv, args.steps)
            times["compiled_fp32"] += per_step_ms(compiled, x, memory.cross_kv, args.steps)
            times["server"] += per_step_ms(graph_run(server), x, served_memory.cross_kv, args.steps)
    medians = {name: round(statistics.median(t), 4) for name, t in times.items()}
    report = {"compile_s": round(compile_s, 1), "median_step_ms": medians,
              "compiled_over_python": round(medians["compiled_fp32"] / medians["python_fp32"], 3),
              "server_over_compiled": round(medians["server"] / medians["compiled_fp32"], 3),
              "largest_logit_difference": difference, "threads": 1, "torch": torch.__version__}
    print(f"torch.compile took {report['compile_s']} s (its first calls); median ms per step: {medians}")
    print(f"compiled / Python step (both fp32): {report['compiled_over_python']}; the server's step "
          f"(fp16 copies, recorded graph) / compiled: {report['server_over_compiled']}; largest logit "
          f"difference compiled vs Python: {difference:.2e}")
    write_report(args.json, report)


if __name__ == "__main__":
    main()
