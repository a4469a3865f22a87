"""Speed as ratios that travel between machines (prints figures and writes JSON; not a test).

    .venv/bin/python bench/floor.py [--sentences 40] [--threads 2] [--json bench/results/floor.json]

First the machine itself: memory read bandwidth with the server's threads (summing a 512 MiB
tensor, median of 7) and the cost of one tiny PyTorch op. Then, on test-split sentences:

- decode / floor: the Transformer's greedy decode in process, divided by the time its fp32 weights
  take to read once from memory at that bandwidth (the encoder's and the source's cross-attention
  keys and values once, the rest of the decoder's and the tied output projection's once per output
  piece). A memory-bound decoder reading fp32 weights cannot beat 1.0. The bandwidth is measured
  again beside each sentence (other tenants of a shared machine take more or less of it from one
  minute to the next), and each sentence's floor uses its own. Beside it, the same decode
  over the floor of the bytes it actually reads: the server reads fp16 copies of the weights
  (models/serving/precision.py), half the bytes, so that floor is about half the fp32 one. Measured as the
  server runs it, and interleaved with five variants, each what one lever buys: the fp32 weights
  (ATTENTION_LAB_PRECISION=fp32), the fp32 weights in the checkpoint's own order (and the
  input-major layout, models/serving/layout.py), the layers' general pass instead of the
  one-position step (models/serving/step.py), the search on the server's intra-op threads instead of one
  (models/serving/threads.py), and the step run in Python instead of replayed from its recorded
  graph (ATTENTION_LAB_STEP=python, models/serving/graph.py).
- HTTP / in process: POST /api/attention on a server started here (result cache off), divided by the
  same work (decode and every map) in this process, the two taken in turns beside the sentence's
  other figures (medians of three); and the same request over the decode's floor.
- compare / alone: POST /api/compare with every model, to its last line, divided by the Transformer
  alone through /api/attention; the models side by side (the default, one lane per core), and on a
  second server one after another (ATTENTION_LAB_LANES=1): what that lever buys. Beside it, compare
  / its own floor (every model's weights read for its own translation), and that floor over the
  Transformer's: what compare / alone tends to as both approach the memory limit.
- one step's weight products alone: the served decoding step's products (fp16 copies, one thread),
  each time after 64 MiB read elsewhere, against that step's share of the floor: how much of the
  decode / floor budget reading the weights takes on this machine before any other call of a step.

The in-process figures run under the server's OpenMP wait policy (app/__init__.py, imported first).
Each ratio is the median over the sentences of per-sentence ratios, all measured in this run, so a
slower or busier machine moves the milliseconds but much less the ratios. The targets (issue 31):
decode / floor <= 2.0, /api/attention over HTTP / floor <= 2.4, compare / its own floor <= 1.5.
"""

from __future__ import annotations

import app  # noqa: F401  # isort: skip  (first: the server's OpenMP policy, app/__init__.py, also in process)
import argparse
import dataclasses
import gzip
import http.client
import json
import os
import platform
import statistics
import time
from contextlib import closing
from urllib.parse import urlsplit

import httpx
import torch
from serving import ROOT, serve, write_report  # bench/serving.py: this script's folder is on sys.path

from app.runtime.loading import load_registry
from app.services.maps import attention_maps
from models import checkpoint, decoding
from models.data import load_split
from models.serving import served, step_of
from models.serving import threads as served_search
from models.serving.layout import layout_of
from models.serving.precision import HalfLinear, HalfTiedEmbedding, precision_of
from models.serving.step import linear

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


def read_once(name: str) -> bool:
    """A weight read once per sentence rather than at every output piece: the encoder's, and what
    only projects the source (the Transformer's cross-attention keys and values, the additive
    attention's U h_j)."""
    return name.startswith("encoder") or name.startswith("attention.U.") or (
        ".cross_attn.W_k." in name or ".cross_attn.W_v." in name)


def weight_bytes(model, copies: bool = False) -> tuple[int, int]:
    """(bytes read once per sentence, bytes read per output piece: the decoder, its final norm and
    the tied embedding it projects onto the vocabulary with), for any of the five models: of its
    fp32 weights, or with `copies` of what it reads, 2 bytes a number where it has fp16 copies."""
    once = per_step = 0
    halved = {id(m.weight) for m in model.modules() if isinstance(m, HalfLinear | HalfTiedEmbedding)}
    for name, p in model.named_parameters():
        size = p.numel() * (2 if copies and id(p) in halved else p.element_size())
        if read_once(name):
            once += size
        else:
            per_step += size
    return once, per_step


def step_products_ms(model, repeats: int = 40) -> float:
    """Milliseconds of one decoding step's weight products alone, as the served step makes them (the
    decoder layers' and the tied output projection's, from the fp16 copies, one intra-op thread),
    each time right after reading 64 MiB elsewhere, so that no cache holds the weights: what this
    machine takes to read one step's weights with none of the step's other calls around them.
    Call it on the model thread."""
    products = [(model.embed.weight, model.out_bias, getattr(model.embed, "half", None))]
    for w in model.steps:  # a ServedTransformer's (models/serving/step.py)
        products += [*w.qkv, w.W_o, w.cross_W_q, w.cross_W_o, w.W_1, w.W_2]
    rows = [torch.randn(1, weight.size(1)) for weight, _, _ in products]
    elsewhere = torch.ones(64 * 2**20 // 4)
    threads, times = torch.get_num_threads(), []
    torch.set_num_threads(1)
    try:
        with torch.inference_mode():
            for _ in range(repeats):
                elsewhere.sum()
                start = time.perf_counter()
                for x, product in zip(rows, products, strict=True):
                    linear(x, product)
                times.append(time.perf_counter() - start)
    finally:
        torch.set_num_threads(threads)
    return statistics.median(times) * 1e3


def floor_seconds(bytes_read: tuple[int, int], pieces: int, gbs: float) -> float:
    """Seconds to read a model's weights for a translation of `pieces` pieces (and its <eos>)."""
    once, per_step = bytes_read
    return (once + (pieces + 1) * per_step) / (gbs * 1e9)


class GeneralPass:
    """The Transformer decoding through its layers' general `forward` instead of the one-position
    step (models/serving/step.py; a memory without the projected source takes that path): what the
    step buys."""

    def __init__(self, model):
        self.model, self.config = model, model.config

    def parameters(self):
        return self.model.parameters()

    def encode(self, src):
        return dataclasses.replace(self.model.encode(src), cross_kv=None)

    def decode(self, memory, tgt_in, cache=None):
        return self.model.decode(memory, tgt_in, cache)


def timed_decode(model, ids: list[int], one_thread: bool = True) -> tuple[float, list[int]]:
    """Seconds of one greedy decode (after a warm one), as the server runs it (the search on one
    intra-op thread, models/serving/threads.py) or, with `one_thread` False, on the model thread's threads."""
    search = served_search.greedy_tokens if one_thread else decoding.greedy_tokens
    with torch.inference_mode():
        search(model, ids)  # warm
        start = time.perf_counter()
        tokens, _ = search(model, ids)
        return time.perf_counter() - start, tokens


def in_process(registry, sentences: list[str], server_threads: int, servers: Servers) -> list[dict]:
    model = registry.get(MODEL).model  # input-major, fp16 copies, the step's graph: as the server runs it

    def load(*how):
        return registry.jobs.thread.run(served, checkpoint.load(ROOT / "checkpoints" / MODEL), *how)

    python_step = load("input-major", "fp16-weights", "python")
    fp32, stored = load("input-major", "fp32"), load("as-stored", "fp32")  # the latter: the checkpoint's order
    assert (layout_of(model), precision_of(model), step_of(model)) == ("input-major", "fp16-weights", "graph")
    assert step_of(python_step) == "python"
    assert (layout_of(fp32), precision_of(fp32), layout_of(stored)) == ("input-major", "fp32", "as-stored")
    tokenizer = registry.tokenizer
    read, read_served = weight_bytes(stored), weight_bytes(model, copies=True)  # the same for every sentence
    rows = []
    for n, text in enumerate(sentences):
        ids = tokenizer.encode(text)
        variants = [(model, True, "decode_ms"), (fp32, True, "fp32_decode_ms"),
                    (stored, True, "stored_decode_ms"), (GeneralPass(model), True, "general_pass_decode_ms"),
                    (model, False, "server_threads_decode_ms"), (python_step, True, "python_step_decode_ms")]
        # the floor at this sentence's moment: on a shared machine the bandwidth other tenants leave
        # moves within minutes, and the decode moves with it
        gbs = bandwidth_gbs(server_threads, mib=256, repeats=5)
        row = {"text": text, "bandwidth_gbs": gbs}
        turn = n % len(variants)
        for which, one_thread, key in variants[turn:] + variants[:turn]:  # interleaved: same conditions
            seconds, tokens = registry.jobs.thread.run(timed_decode, which, ids, one_thread)
            row[key] = seconds * 1e3
        row.update(servers.attention(registry, text))
        row["compare_ms"], pieces = compare_ms(servers.client, text, list(servers.read))
        row["compare_one_lane_ms"] = compare_ms(servers.one_lane, text, list(servers.read))[0]
        compare_floor = sum(floor_seconds(servers.read[m], k, gbs) for m, k in pieces.items())
        rows.append({**row, "pieces": len(tokens), "floor_ms": floor_seconds(read, len(tokens), gbs) * 1e3,
                     "served_floor_ms": floor_seconds(read_served, len(tokens), gbs) * 1e3,
                     "compare_floor_ms": compare_floor * 1e3})
    return rows


@dataclasses.dataclass
class Servers:
    """Clients of the two servers started here (result cache off): the server as configured, and one
    that runs a compare's models one after another (ATTENTION_LAB_LANES=1); `read`: each model's
    weight_bytes, for compare's own floor (every model's weights read for its translation, at the
    bandwidth measured beside that sentence, as the Transformer's floor, so that the floors' ratio
    is the bytes' ratio)."""

    client: httpx.Client
    one_lane: httpx.Client
    read: dict[str, tuple[int, int]]
    lean: http.client.HTTPConnection  # the first server again, through Python's own client

    def attention(self, registry, text: str, repeats: int = 3) -> dict[str, float]:
        """Medians of POST /api/attention for the Transformer, of the same work in this process
        (decode and every map, on the model thread as the server runs it) and of the same request
        through http.client, taken in turns: all three at the same moment of a shared machine.
        httpx parses the answer in Python; the lean client shows how much of the HTTP figure that is."""
        body = {"text": text, "model": MODEL}
        self.client.post("/api/attention", json=body).raise_for_status()  # warm
        over_http, here, lean = [], [], []
        for _ in range(repeats):
            start = time.perf_counter()
            self.client.post("/api/attention", json=body).raise_for_status()
            over_http.append((time.perf_counter() - start) * 1e3)
            start = time.perf_counter()
            attention_maps(registry, MODEL, text)
            here.append((time.perf_counter() - start) * 1e3)
            start = time.perf_counter()
            self._lean_post("/api/attention", body)
            lean.append((time.perf_counter() - start) * 1e3)
        return {"attention_http_ms": statistics.median(over_http),
                "attention_in_process_ms": statistics.median(here),
                "attention_lean_client_ms": statistics.median(lean)}

    def _lean_post(self, path: str, body: dict) -> bytes:
        """POST `body` on the kept-alive connection, asking for gzip as httpx and browsers do; the
        answer read whole and unzipped."""
        self.lean.request("POST", path, json.dumps(body).encode(),
                          {"Content-Type": "application/json", "Accept-Encoding": "gzip"})
        answer = self.lean.getresponse()
        data = answer.read()
        if answer.status != 200:
            raise RuntimeError(f"{path}: {answer.status} {data[:200]!r}")
        return gzip.decompress(data) if answer.getheader("Content-Encoding") == "gzip" else data


def compare_ms(client: httpx.Client, text: str, models: list[str]) -> tuple[float, dict[str, int]]:
    """Milliseconds of POST /api/compare to its last line, and each model's output pieces."""
    start = time.perf_counter()
    with client.stream("POST", "/api/compare", json={"text": text, "models": models}) as answer:
        answer.raise_for_status()
        lines = [json.loads(line) for line in answer.iter_lines()]
    seconds = time.perf_counter() - start
    assert sorted(line["model"] for line in lines) == sorted(models)
    return seconds * 1e3, {line["model"]: len(line["target_tokens"]) for line in lines}


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
    env = {"ATTENTION_LAB_CACHE_SIZE": "0", "ATTENTION_LAB_TORCH_THREADS": str(args.threads)}
    with (serve(env) as url, serve({**env, "ATTENTION_LAB_LANES": "1"}) as one_lane_url,
          httpx.Client(base_url=url, timeout=120) as client,
          httpx.Client(base_url=one_lane_url, timeout=120) as lane,
          closing(http.client.HTTPConnection(urlsplit(url).netloc, timeout=120)) as lean,
          load_registry(ROOT / "checkpoints", device="cpu", cache_size=0) as registry):
        registry.jobs.thread.run(torch.set_num_threads, args.threads)
        models = registry.names
        read = {name: weight_bytes(registry.get(name).model) for name in models}
        rows = in_process(registry, sentences, args.threads, Servers(client, lane, read, lean))
        # one step's products alone against that step's floor, at the bandwidth measured beside them
        products = [(bandwidth_gbs(args.threads, mib=256, repeats=5),
                     registry.jobs.thread.run(step_products_ms, registry.get(MODEL).model)) for _ in range(5)]
    report = {
        "machine": {"platform": platform.platform(), "processor": platform.processor() or platform.machine(),
                    "cores": os.cpu_count(), "threads": args.threads, "bandwidth_gbs": round(gbs, 2),
                    "bandwidth_per_sentence_gbs": [round(f(r["bandwidth_gbs"] for r in rows), 2)
                                                   for f in (min, statistics.median, max)],
                    "op_overhead_us": round(overhead, 2), "torch": torch.__version__},
        "sentences": len(rows),
        "ratios": {
            "decode_over_floor": round(median_ratio(rows, "decode_ms", "floor_ms"), 2),
            "decode_over_its_bytes_floor": round(median_ratio(rows, "decode_ms", "served_floor_ms"), 2),
            "fp32_decode_over_floor": round(median_ratio(rows, "fp32_decode_ms", "floor_ms"), 2),
            "fp32_over_fp16_copies": round(median_ratio(rows, "fp32_decode_ms", "decode_ms"), 2),
            "stored_layout_decode_over_floor": round(median_ratio(rows, "stored_decode_ms", "floor_ms"), 2),
            "stored_layout_over_input_major": round(
                median_ratio(rows, "stored_decode_ms", "fp32_decode_ms"), 2),
            "general_pass_over_step": round(median_ratio(rows, "general_pass_decode_ms", "decode_ms"), 2),
            "python_step_over_graph": round(median_ratio(rows, "python_step_decode_ms", "decode_ms"), 2),
            "server_threads_over_one_thread": round(
                median_ratio(rows, "server_threads_decode_ms", "decode_ms"), 2),
            "http_over_in_process": round(
                median_ratio(rows, "attention_http_ms", "attention_in_process_ms"), 2),
            "http_over_floor": round(median_ratio(rows, "attention_http_ms", "floor_ms"), 2),
            "lean_client_over_floor": round(median_ratio(rows, "attention_lean_client_ms", "floor_ms"), 2),
            "httpx_over_lean_client": round(
                median_ratio(rows, "attention_http_ms", "attention_lean_client_ms"), 2),
            "compare_over_alone": round(median_ratio(rows, "compare_ms", "attention_http_ms"), 2),
            "compare_one_lane_over_alone": round(
                median_ratio(rows, "compare_one_lane_ms", "attention_http_ms"), 2),
            "compare_over_its_floor": round(median_ratio(rows, "compare_ms", "compare_floor_ms"), 2),
            # what compare / alone tends to as both reach the memory floor: the five models' bytes
            # against the Transformer's
            "compare_floor_over_transformer_floor": round(
                median_ratio(rows, "compare_floor_ms", "floor_ms"), 2),
            "step_products_over_step_floor": round(statistics.median(
                ms / (read[MODEL][1] / (gbs * 1e9) * 1e3) for gbs, ms in products), 2),
        },
        "step_products": {"bandwidth_gbs": [round(g, 2) for g, _ in products],
                          "ms": [round(ms, 3) for _, ms in products],
                          "step_floor_ms": [round(read[MODEL][1] / (g * 1e9) * 1e3, 3) for g, _ in products]},
        "medians_ms": {key: round(statistics.median(r[key] for r in rows), 2) for key in
                       ("decode_ms", "fp32_decode_ms", "stored_decode_ms", "general_pass_decode_ms",
                        "python_step_decode_ms",
                        "server_threads_decode_ms", "floor_ms", "served_floor_ms", "attention_in_process_ms",
                        "attention_http_ms", "attention_lean_client_ms", "compare_ms", "compare_one_lane_ms",
                        "compare_floor_ms")},
        "rows": rows,
    }
    print(table(report))
    write_report(args.json, report)
    return report


def table(report: dict) -> str:
    m, r, ms = report["machine"], report["ratios"], report["medians_ms"]
    return "\n".join([
        f"machine: {m['processor']}, {m['cores']} cores, {m['threads']} torch threads, "
        f"read bandwidth {m['bandwidth_gbs']} GB/s at the start and {m['bandwidth_per_sentence_gbs']} "
        f"(min, median, max) beside the sentences, one tiny op {m['op_overhead_us']} us",
        f"{report['sentences']} test sentences, medians:",
        "| measure | ratio | example (ms, this machine) |",
        "|---|---|---|",
        f"| transformer greedy decode / weight-bytes floor (fp32 weights) | {r['decode_over_floor']} | "
        f"{ms['decode_ms']} / {ms['floor_ms']} |",
        f"| the same / the floor of the bytes it reads (fp16 copies) | {r['decode_over_its_bytes_floor']} | "
        f"{ms['decode_ms']} / {ms['served_floor_ms']} |",
        f"| the same, fp32 weights (ATTENTION_LAB_PRECISION=fp32) | {r['fp32_decode_over_floor']} | "
        f"{ms['fp32_decode_ms']} / {ms['floor_ms']} |",
        f"| the same, fp32 weights in the checkpoint's order (and ATTENTION_LAB_LAYOUT=as-stored) | "
        f"{r['stored_layout_decode_over_floor']} | {ms['stored_decode_ms']} / {ms['floor_ms']} |",
        f"| the same, through the layers' general pass (no one-position step) | "
        f"{round(r['general_pass_over_step'] * r['decode_over_floor'], 2)} | "
        f"{ms['general_pass_decode_ms']} / {ms['floor_ms']} |",
        f"| the same, the step in Python (ATTENTION_LAB_STEP=python, no recorded graph) | "
        f"{round(r['python_step_over_graph'] * r['decode_over_floor'], 2)} | "
        f"{ms['python_step_decode_ms']} / {ms['floor_ms']} |",
        f"| the same, the search on the server's {m['threads']} threads (not one) | "
        f"{round(r['server_threads_over_one_thread'] * r['decode_over_floor'], 2)} | "
        f"{ms['server_threads_decode_ms']} / {ms['floor_ms']} |",
        f"| /api/attention over HTTP / in process | {r['http_over_in_process']} | "
        f"{ms['attention_http_ms']} / {ms['attention_in_process_ms']} |",
        f"| /api/attention over HTTP (decode and every map) / the decode's weight-bytes floor | "
        f"{r['http_over_floor']} | {ms['attention_http_ms']} / {ms['floor_ms']} |",
        f"| the same through Python's http.client (not httpx) / that floor | {r['lean_client_over_floor']} | "
        f"{ms['attention_lean_client_ms']} / {ms['floor_ms']} |",
        f"| /api/compare (all models) / transformer alone | {r['compare_over_alone']} | "
        f"{ms['compare_ms']} / {ms['attention_http_ms']} |",
        f"| the same, models one after another (ATTENTION_LAB_LANES=1) | {r['compare_one_lane_over_alone']} | "
        f"{ms['compare_one_lane_ms']} / {ms['attention_http_ms']} |",
        f"| /api/compare (all models) / their weight-bytes floor | {r['compare_over_its_floor']} | "
        f"{ms['compare_ms']} / {ms['compare_floor_ms']} |",
        f"| all models' floor / the transformer's (compare / alone at the memory limit) | "
        f"{r['compare_floor_over_transformer_floor']} | {ms['compare_floor_ms']} / {ms['floor_ms']} |",
        f"| one decoding step's weight products alone, none cached / that step's fp32 floor | "
        f"{r['step_products_over_step_floor']} | {statistics.median(report['step_products']['ms'])} / "
        f"{statistics.median(report['step_products']['step_floor_ms'])} |",
    ])


if __name__ == "__main__":
    main()
