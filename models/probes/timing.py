"""The parallel chapter: wall time of an encoder against the length of its input.

A recurrent encoder takes one step per token, each waiting for the last; a Transformer encoder
reads every position at once in a few matrix products. The loop here is pure: it takes a
callable that times one call and the lengths, and decides only what to run and when to stop.

The encoders timed are the served ones (models/serving): a Transformer's encoder replays its
recorded graph up to its positional table's length and runs the derivation's calls from Python
beyond it. The graph saves a fixed cost per call (the interpreter's share of each small call), which
weighs at short lengths and is lost in the noise of the long ones.
"""

from __future__ import annotations

import os
import platform
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch

from models.config import TransformerConfig
from models.serving.threads import intra_op
from models.tokenizer import UNK_ID

LENGTHS = (10, 18, 32, 56, 100, 178, 316, 562, 1000)  # quarter decades, 10^(1 + k/4) rounded
SEED = 0  # the same random pieces for every measurement of a length


@dataclass
class Timing:
    length: int
    median_ms: float  # median wall time of one call
    repeats: int  # calls timed


Run = Callable[[str, int], float]  # (model, length) -> seconds of one call
Progress = Callable[[int, int], None]  # (calls done, calls planned)


def measure(run: Run, names: Sequence[str], lengths: Sequence[int], repeats: int, limit_s: float,
            clock: Callable[[], float] = time.monotonic,
            progress: Progress | None = None) -> dict[str, list[Timing]]:
    """Median time of `run(name, length)` for every name and length, in passes: one untimed
    warm-up call per name at the shortest and the longest length, then pass after pass over every
    length (the names side by side at each), each pass adding one repeat. The first pass always
    runs in full, so every length has a time; later passes start only while `limit_s` seconds
    (from the start) are not spent, and a pass cut short leaves some lengths one repeat fewer."""
    deadline = clock() + limit_s
    for name in names:
        for length in sorted({min(lengths), max(lengths)}):
            run(name, length)
    samples: dict[tuple[str, int], list[float]] = {(n, length): [] for n in names for length in lengths}
    planned = [(length, name) for _ in range(repeats) for length in lengths for name in names]
    for done, (length, name) in enumerate(planned, start=1):
        if done > len(samples) and clock() >= deadline:  # past the first pass and out of time
            break
        samples[name, length].append(run(name, length))
        if progress is not None:
            progress(done, len(planned))
    return {name: [Timing(length, 1000 * statistics.median(samples[name, length]), len(samples[name, length]))
                   for length in lengths] for name in names}


def random_ids(length: int, vocab_size: int, device) -> torch.Tensor:
    """(1, length) ordinary piece ids (no padding or other special id), the same for a length."""
    generator = torch.Generator().manual_seed(SEED + length)
    return torch.randint(UNK_ID + 1, vocab_size, (1, length), generator=generator).to(device)


def time_encode(model, ids: torch.Tensor, threads: int) -> float:
    """Seconds of one `model.encode(ids)` under inference_mode with `threads` intra-op threads
    (the caller's count is restored), waiting for a GPU to finish the work."""
    with intra_op(threads), torch.inference_mode():
        _synchronize(ids.device)
        start = time.perf_counter()
        model.encode(ids)
        _synchronize(ids.device)
        return time.perf_counter() - start


def _synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def device_name(device: torch.device) -> str:
    if device.type == "cuda":
        return torch.cuda.get_device_name(device)
    return f"{platform.machine()} CPU, {os.cpu_count()} cores"


def encoder_size(model) -> dict:
    """The encoder's size, as numbers the page phrases when it compares the two (cell: "rnn", "lstm"
    or "transformer"; the entries a kind of encoder does not have are None)."""
    c = model.config
    if isinstance(c, TransformerConfig):
        return {"cell": "transformer", "layers": c.n_encoder_layers, "width": c.d_model, "embeddings": None,
                "heads": c.n_heads, "feed_forward": c.d_ff, "positions": c.max_len}
    return {"cell": c.cell, "layers": 1, "width": c.d_hidden, "embeddings": c.d_embed,
            "heads": None, "feed_forward": None, "positions": None}
