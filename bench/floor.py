"""Speed as ratios that travel between machines (prints figures and writes JSON; not a test).

    .venv/bin/python bench/floor.py [--sentences 40] [--threads 2] [--json bench/results/floor.json]

First the machine itself: memory read bandwidth with the server's threads (summing a 512 MiB
tensor, median of 7) and the cost of one tiny PyTorch op. Then, on test-split sentences:

- decode / floor: the Transformer's greedy decode in process, divided by the time its fp32 weights
  take to read once from memory at that bandwidth (the encoder's once, the decoder's and the tied
  output projection's once per output piece). A memory-bound decoder cannot beat 1.0. Measured with
  the weights as the server keeps them (input-major, models/layout.py) and, interleaved, in the
  checkpoint's own order: what that lever buys.
- HTTP / in process: POST /api/attention on a server started here (result cache off), divided by the
  same work (decode and every map) in this process.
- compare / alone: POST /api/compare with every model, to its last line, divided by the Transformer
  alone through /api/attention; the models side by side (the default, one lane per core), and on a
  second server one after another (ATTENTION_LAB_LANES=1): what that lever buys.

Each ratio is the median over the sentences of per-sentence ratios, all measured in this run, so a
slower or busier machine moves the milliseconds but much less the ratios. Issue 17's targets:
decode / floor <= 2.0, HTTP / in process <= 1.2, compare / alone <= 1.6.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import platform
import statistics
import time

import httpx
import torch
from serving import ROOT, serve, write_report  # bench/serving.py: this script's folder is on sys.path

from app.services.maps import attention_maps
from app.services.registry import load_registry
from models import checkpoint
from models.data import load_split
from models.decoding import greedy_tokens
from models.layout import layout_of

MODEL = "transformer"


def bandwidth_gbs(threads: int, mib: int = 512, repeats: int = 7) -> float:
    """Memory read bandwidth, GB/s: a tensor far larger than the caches, summed."""
    torch.set_num_threads(threads)
    data = torch.ones(mib * 2**20 // 4)
    data.sum()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        data.sum()
        times.append(time.perf_counter() - start)
    return data.numel() * 4 / statistics.median(times) / 1e9


def op_overhead_us(repeats: int = 2000) -> float:
    """Median microseconds of one tiny op: what each of the decoder's many small calls costs at least."""
    a, b = torch.ones(4), torch.ones(4)
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        torch.add(a, b)
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e6


def weight_bytes(model) -> tuple[int, int]:
    """(bytes read once per sentence: the encoder; bytes read per output piece: the decoder, its
    final norm and the tied embedding it projects onto the vocabulary with)."""
    once = per_step = 0
    for name, p in model.named_parameters():
        size = p.numel() * p.element_size()
        if name.startswith("encoder"):
            once += size
        elif name.startswith(("decoder", "embed", "out_bias")):
            per_step += size
    return once, per_step


class GeneralPass:
    """The Transformer decoding through its layers' general `forward` instead of the one-position
    `decode_step` (a memory without the projected source takes that path): what the step buys."""

    def __init__(self, model):
        self.model, self.config = model, model.config

    def parameters(self):
        return self.model.parameters()

    def encode(self, src):
        return dataclasses.replace(self.model.encode(src), cross_kv=None)

    def decode(self, memory, tgt_in, cache=None):
        return self.model.decode(memory, tgt_in, cache)


def timed_decode(model, ids: list[int], threads: int | None = None) -> tuple[float, list[int]]:
    """Seconds of one greedy decode (after a warm one), with `threads` intra-op threads (None: as
    the model thread has them)."""
    before = torch.get_num_threads()
    torch.set_num_threads(threads or before)
    try:
        with torch.inference_mode():
            greedy_tokens(model, ids)  # warm
            start = time.perf_counter()
            tokens, _ = greedy_tokens(model, ids)
            return time.perf_counter() - start, tokens
    finally:
        torch.set_num_threads(before)


def in_process(registry, sentences: list[str], gbs: float) -> list[dict]:
    model = registry.get(MODEL).model  # input-major: the server's layout
    stored = registry.worker.run(checkpoint.load, ROOT / "checkpoints" / MODEL)  # the checkpoint's own order
    assert layout_of(model) == "input-major" and layout_of(stored) == "as-stored"
    tokenizer = registry.tokenizer
    once, per_step = weight_bytes(stored)
    rows = []
    for n, text in enumerate(sentences):
        ids = tokenizer.encode(text)
        variants = [(model, None, "decode_ms"), (stored, None, "stored_decode_ms"),
                    (GeneralPass(model), None, "general_pass_decode_ms"), (model, 1, "one_thread_decode_ms")]
        row = {"text": text}
        for which, threads, key in variants[n % 4:] + variants[: n % 4]:  # interleaved: same conditions for all
            seconds, tokens = registry.worker.run(timed_decode, which, ids, threads)
            row[key] = seconds * 1e3
        start = time.perf_counter()
        attention_maps(registry, MODEL, text)  # runs on the model thread, as the server runs it
        maps = time.perf_counter() - start
        floor = (once + (len(tokens) + 1) * per_step) / (gbs * 1e9)
        rows.append({**row, "pieces": len(tokens), "floor_ms": floor * 1e3,
                     "attention_in_process_ms": maps * 1e3})
    return rows


def over_http(url: str, rows: list[dict], models: list[str]) -> None:
    with httpx.Client(base_url=url, timeout=120) as client:
        for row in rows:
            body = {"text": row["text"], "model": MODEL}
            client.post("/api/attention", json=body).raise_for_status()  # warm
            start = time.perf_counter()
            client.post("/api/attention", json=body).raise_for_status()
            row["attention_http_ms"] = (time.perf_counter() - start) * 1e3
            row["compare_ms"] = compare_ms(client, row["text"], models)


def one_lane(url: str, rows: list[dict], models: list[str]) -> None:
    """/api/compare on a server that runs the models one after another (ATTENTION_LAB_LANES=1)."""
    with httpx.Client(base_url=url, timeout=120) as client:
        for row in rows:
            row["compare_one_lane_ms"] = compare_ms(client, row["text"], models)


def compare_ms(client: httpx.Client, text: str, models: list[str]) -> float:
    """Milliseconds of POST /api/compare to its last line."""
    start = time.perf_counter()
    with client.stream("POST", "/api/compare", json={"text": text, "models": models}) as answer:
        answer.raise_for_status()
        lines = sum(1 for _ in answer.iter_lines())
    assert lines == len(models)
    return (time.perf_counter() - start) * 1e3


def median_ratio(rows: list[dict], top: str, bottom: str) -> float:
    return statistics.median(r[top] / r[bottom] for r in rows)


def main() -> dict:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sentences", type=int, default=40)
    p.add_argument("--threads", type=int, default=2, help="torch threads, here and on the server")
    p.add_argument("--json", default=None, help="write the figures here")
    args = p.parse_args()
    gbs = bandwidth_gbs(args.threads)
    overhead = op_overhead_us()
    test = load_split().test
    sentences = [pair.fr for pair in test[:: max(len(test) // args.sentences, 1)][: args.sentences]]
    with load_registry(ROOT / "checkpoints", device="cpu", cache_size=0) as registry:
        registry.worker.run(torch.set_num_threads, args.threads)
        models = registry.names
        rows = in_process(registry, sentences, gbs)
    env = {"ATTENTION_LAB_CACHE_SIZE": "0", "ATTENTION_LAB_TORCH_THREADS": str(args.threads)}
    with serve(env) as url:
        over_http(url, rows, models)
    with serve({**env, "ATTENTION_LAB_LANES": "1"}) as url:
        one_lane(url, rows, models)
    report = {
        "machine": {"platform": platform.platform(), "processor": platform.processor() or platform.machine(),
                    "cores": os.cpu_count(), "threads": args.threads, "bandwidth_gbs": round(gbs, 2),
                    "op_overhead_us": round(overhead, 2), "torch": torch.__version__},
        "sentences": len(rows),
        "ratios": {
            "decode_over_floor": round(median_ratio(rows, "decode_ms", "floor_ms"), 2),
            "stored_layout_decode_over_floor": round(median_ratio(rows, "stored_decode_ms", "floor_ms"), 2),
            "stored_layout_over_input_major": round(median_ratio(rows, "stored_decode_ms", "decode_ms"), 2),
            "general_pass_over_step": round(median_ratio(rows, "general_pass_decode_ms", "decode_ms"), 2),
            "one_thread_over_server_threads": round(median_ratio(rows, "one_thread_decode_ms", "decode_ms"), 2),
            "http_over_in_process": round(
                median_ratio(rows, "attention_http_ms", "attention_in_process_ms"), 2),
            "compare_over_alone": round(median_ratio(rows, "compare_ms", "attention_http_ms"), 2),
            "compare_one_lane_over_alone": round(
                median_ratio(rows, "compare_one_lane_ms", "attention_http_ms"), 2),
        },
        "medians_ms": {key: round(statistics.median(r[key] for r in rows), 2) for key in
                       ("decode_ms", "stored_decode_ms", "general_pass_decode_ms", "one_thread_decode_ms",
                        "floor_ms", "attention_in_process_ms",
                        "attention_http_ms", "compare_ms", "compare_one_lane_ms")},
        "rows": rows,
    }
    print(table(report))
    write_report(args.json, report)
    return report


def table(report: dict) -> str:
    m, r, ms = report["machine"], report["ratios"], report["medians_ms"]
    return "\n".join([
        f"machine: {m['processor']}, {m['cores']} cores, {m['threads']} torch threads, "
        f"read bandwidth {m['bandwidth_gbs']} GB/s, one tiny op {m['op_overhead_us']} us",
        f"{report['sentences']} test sentences, medians:",
        "| measure | ratio | example (ms, this machine) |",
        "|---|---|---|",
        f"| transformer greedy decode / weight-bytes floor | {r['decode_over_floor']} | "
        f"{ms['decode_ms']} / {ms['floor_ms']} |",
        f"| the same, weights in the checkpoint's order (ATTENTION_LAB_LAYOUT=as-stored) | "
        f"{r['stored_layout_decode_over_floor']} | {ms['stored_decode_ms']} / {ms['floor_ms']} |",
        f"| the same, through the layers' general pass (no decode_step) | "
        f"{round(r['general_pass_over_step'] * r['decode_over_floor'], 2)} | "
        f"{ms['general_pass_decode_ms']} / {ms['floor_ms']} |",
        f"| the same, one intra-op thread | "
        f"{round(r['one_thread_over_server_threads'] * r['decode_over_floor'], 2)} | "
        f"{ms['one_thread_decode_ms']} / {ms['floor_ms']} |",
        f"| /api/attention over HTTP / in process | {r['http_over_in_process']} | "
        f"{ms['attention_http_ms']} / {ms['attention_in_process_ms']} |",
        f"| /api/compare (all models) / transformer alone | {r['compare_over_alone']} | "
        f"{ms['compare_ms']} / {ms['attention_http_ms']} |",
        f"| the same, models one after another (ATTENTION_LAB_LANES=1) | {r['compare_one_lane_over_alone']} | "
        f"{ms['compare_one_lane_ms']} / {ms['attention_http_ms']} |",
    ])


if __name__ == "__main__":
    main()
