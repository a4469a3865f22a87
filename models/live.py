"""Train it yourself: the step from the bottleneck chapter to the attention chapter as an experiment a
reader runs.

The task: a random sequence of `length` symbols (from an alphabet of `alphabet`) is to be written
back reversed (or copied). The answer is known, so a model either learned it or did not: the score
is the share of held-out sequences it reproduces exactly, greedily, with no help. The contestants
are the lab's own architectures (models/seq2seq.py, models/transformer.py), built by the same code
as the shipped models at a tiny size: the bottleneck (`lstm`: the decoder sees one vector) and the
same LSTM allowed to look back (`lstm-additive`, `lstm-dot`), the plain `rnn`, and a one-layer
Transformer.

Everything is seeded: the same settings give the same data, the same initial weights and so the
same losses, step for step (one torch thread). Budgets are counted in steps, so a run is
reproducible on any machine; the seconds limit only guards a slow machine and is reported when it
cut a contestant short. The contestants train in turns of about TURN_S seconds each, so their curves
grow side by side; every turn ends with a progress line.

    python -m models.live run '{"length": 16}'         # NDJSON progress lines on stdout
    python -m models.live sweep --json checkpoints/live/sweep.json
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import dataclasses
import json
import os
import signal
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F
from torch import nn

from models.architectures import build, default_config
from models.config import ModelConfig, TransformerConfig
from models.live_config import CONTESTANTS, TASKS, LiveConfig, LiveLimits  # noqa: F401 (re-exported)
from models.tokenizer import BOS_ID, EOS_ID

FIRST_SYMBOL = EOS_ID + 2  # symbols come after PAD, BOS, EOS and UNK
TURN_S = 0.5  # seconds a contestant trains before the next one takes its turn
EVAL_SEED = 10_000  # held-out sequences are drawn from their own stream, never trained on
PROBE_SEED = 20_000
PR_SET_PDEATHSIG = 1  # prctl(2): the signal a process gets when its parent dies


def contestant_config(name: str, c: LiveConfig) -> ModelConfig:
    """The shipped architecture of `name` at the experiment's size, no dropout."""
    vocab = FIRST_SYMBOL + c.alphabet
    if name == "transformer":
        return TransformerConfig(vocab_size=vocab, d_model=c.width, n_heads=2, n_encoder_layers=1,
                                 n_decoder_layers=1, d_ff=2 * c.width, dropout=0.0, max_len=c.length + 2)
    return dataclasses.replace(default_config(name, vocab), d_embed=32, d_hidden=c.width, d_attn=32,
                               dropout=0.0, max_len=c.length + 1)


def sequences(n: int, c: LiveConfig, generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """n task pairs: sources (n, L) of random symbols and their targets (n, L)."""
    src = torch.randint(FIRST_SYMBOL, FIRST_SYMBOL + c.alphabet, (n, c.length), generator=generator)
    return src, src.flip(1) if c.task == "reverse" else src.clone()


def teacher_forcing(tgt: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """tgt (B, L) -> decoder input [BOS, y_1..y_L] and expected output [y_1..y_L, EOS], each (B, L+1)."""
    bos = torch.full((tgt.size(0), 1), BOS_ID)
    eos = torch.full((tgt.size(0), 1), EOS_ID)
    return torch.cat([bos, tgt], 1), torch.cat([tgt, eos], 1)


@torch.no_grad()
def greedy_batch(model: nn.Module, src: torch.Tensor, steps: int) -> torch.Tensor:
    """Each row of src (B, S) decoded greedily for `steps` tokens, all rows at once: (B, steps)."""
    memory = model.encode(src)
    last = torch.full((src.size(0), 1), BOS_ID)
    cache, out = None, []
    for _ in range(steps):
        logits, _, cache = model.decode(memory, last, cache)
        last = logits[:, -1].argmax(-1, keepdim=True)  # (B, 1)
        out.append(last)
    return torch.cat(out, 1)


def accuracy(model: nn.Module, src: torch.Tensor, tgt: torch.Tensor) -> tuple[float, float]:
    """(exact, per-symbol): the share of sequences written back exactly, then ended (EOS), and the
    share of symbols right at their position, decoding greedily."""
    model.eval()
    predicted = greedy_batch(model, src, tgt.size(1) + 1)
    model.train()
    right = predicted[:, :-1] == tgt  # (B, L)
    exact = right.all(1) & (predicted[:, -1] == EOS_ID)
    return round(exact.float().mean().item(), 4), round(right.float().mean().item(), 4)


@torch.no_grad()
def probe_map(model: nn.Module, src: torch.Tensor, tgt: torch.Tensor) -> list[list[float]] | None:
    """The cross-attention of one probe pair, teacher-forced: (L+1) output positions x L source
    symbols, the last layer's heads averaged; None for a model without attention (the bottleneck)."""
    model.eval()
    tgt_in, _ = teacher_forcing(tgt)
    weights = model(src, tgt_in).attentions.get("cross")  # (1, layers, heads, L+1, L)
    model.train()
    if weights is None:
        return None
    return [[round(w, 3) for w in row] for row in weights[0, -1].mean(0).tolist()]


@dataclass
class Contestant:
    """One model in training: its weights, optimizer, data stream, and where it stands."""

    name: str
    model: nn.Module
    optimizer: torch.optim.Optimizer
    data: torch.Generator
    step: int = 0
    seconds: float = 0.0  # training time, evaluation excluded
    losses: list[float] = field(default_factory=list)
    stopped_by: str | None = None  # "steps", "seconds" or "reader"

    @classmethod
    def start(cls, name: str, index: int, c: LiveConfig) -> Contestant:
        torch.manual_seed(c.seed * 1000 + index)  # the same initial weights for the same settings
        model = build(contestant_config(name, c)).train()
        data = torch.Generator().manual_seed(c.seed * 1000 + 100 + index)
        return cls(name, model, torch.optim.Adam(model.parameters(), lr=c.learning_rate), data)

    def train_step(self, c: LiveConfig) -> float:
        src, tgt = sequences(c.batch, c, self.data)
        tgt_in, tgt_out = teacher_forcing(tgt)
        logits = self.model(src, tgt_in).logits  # (B, L+1, V)
        loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)), tgt_out.reshape(-1))
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        nn.utils.clip_grad_norm_(self.model.parameters(), 1.0)
        self.optimizer.step()
        self.step += 1
        self.losses.append(loss.item())
        return self.losses[-1]

    def turn(self, c: LiveConfig, seconds: float) -> list[float]:
        """Train for about `seconds`, within the budget; the losses of the steps taken."""
        losses, turn_began = [], time.perf_counter()
        while self.stopped_by is None and time.perf_counter() - turn_began < seconds:
            began = time.perf_counter()
            losses.append(self.train_step(c))
            self.seconds += time.perf_counter() - began
            if self.step >= c.steps:
                self.stopped_by = "steps"
            elif self.seconds >= c.seconds:
                self.stopped_by = "seconds"
        return losses


def held_out(c: LiveConfig) -> tuple[torch.Tensor, torch.Tensor]:
    """The sequences every contestant is scored on (their own seed: never in training)."""
    return sequences(c.held_out, c, torch.Generator().manual_seed(c.seed * 1000 + EVAL_SEED))


def probe(c: LiveConfig) -> tuple[torch.Tensor, torch.Tensor]:
    """The one pair whose attention map is drawn as it trains."""
    src, tgt = sequences(1, c, torch.Generator().manual_seed(c.seed * 1000 + PROBE_SEED))
    return src, tgt


def run(c: LiveConfig, stop: Callable[[], bool] = lambda: False, map_every: int = 2) -> Iterator[dict]:
    """The experiment as a stream of JSON-ready lines: the settings and the probe first, then a
    progress line per contestant's turn (loss, accuracy, and every `map_every` turns the probe's
    map), then each contestant's final line (`done`), then a summary. `stop()` true: every
    contestant ends where it stands (stopped by the reader)."""
    torch.set_num_threads(1)  # one thread: the same numbers every time, and the server keeps its cores
    src_eval, tgt_eval = held_out(c)
    src_probe, tgt_probe = probe(c)
    yield {"settings": dataclasses.asdict(c), "chance": chance(c),
           "probe": {"source": symbols(src_probe[0]), "target": symbols(tgt_probe[0])}}
    field = [Contestant.start(name, i, c) for i, name in enumerate(c.contestants)]
    turns = 0
    while any(x.stopped_by is None for x in field):
        for x in field:
            if x.stopped_by is not None:
                continue
            if stop():
                x.stopped_by = "reader"
                continue
            losses = x.turn(c, TURN_S)
            exact, per_symbol = accuracy(x.model, src_eval, tgt_eval)
            line = {"contestant": x.name, "step": x.step, "seconds": round(x.seconds, 3),
                    "loss": round(sum(losses) / max(len(losses), 1), 4), "accuracy": exact,
                    "token_accuracy": round(per_symbol, 4)}
            if turns % map_every == 0 or x.stopped_by is not None:
                line["map"] = probe_map(x.model, src_probe, tgt_probe)
            yield line
        turns += 1
    finals = []
    for x in field:
        exact, per_symbol = accuracy(x.model, src_eval, tgt_eval)
        final = {"contestant": x.name, "done": True, "step": x.step, "seconds": round(x.seconds, 3),
                 "loss": round(sum(x.losses[-20:]) / max(len(x.losses[-20:]), 1), 4), "accuracy": exact,
                 "token_accuracy": round(per_symbol, 4), "stopped_by": x.stopped_by,
                 "attention": attention_of(x.name), "first_losses": [round(v, 6) for v in x.losses[:20]],
                 "map": probe_map(x.model, src_probe, tgt_probe)}
        finals.append(final)
        yield final
    yield {"finished": True, "summary": summary(finals)}


def chance(c: LiveConfig) -> float:
    """Exact-sequence accuracy of guessing each symbol: (1 / alphabet)^length."""
    return (1 / c.alphabet) ** c.length


def symbols(ids: torch.Tensor) -> list[int]:
    """Token ids -> the task's symbols 0..alphabet-1, as the page shows them."""
    return [int(i) - FIRST_SYMBOL for i in ids]


def attention_of(name: str) -> str | None:
    """How a contestant looks back at the source: None for the bottleneck models."""
    config = default_config(name, FIRST_SYMBOL + 1)
    return "scaled-dot" if isinstance(config, TransformerConfig) else config.attention


def summary(finals: list[dict]) -> dict:
    """The run's verdict from its own numbers: the best contestant with attention against the best
    without, and by how much."""
    looking = [f for f in finals if f["attention"]]
    squeezed = [f for f in finals if not f["attention"]]
    best = lambda group: max(group, key=lambda f: f["accuracy"]) if group else None  # noqa: E731
    a, b = best(looking), best(squeezed)
    out = {"best_attention": a and {"contestant": a["contestant"], "accuracy": a["accuracy"]},
           "best_bottleneck": b and {"contestant": b["contestant"], "accuracy": b["accuracy"]}}
    if a and b:
        out["gap"] = round(a["accuracy"] - b["accuracy"], 4)
    return out


def sweep(lengths: list[int], contestants: tuple[str, ...], base: LiveConfig) -> list[dict]:
    """Final accuracy at `base`'s budget for every length and contestant (run in turn): one row
    each, printed to stderr as it comes."""
    rows = []
    for length in lengths:
        c = dataclasses.replace(base, length=length, contestants=contestants)
        for f in (line for line in run(c) if line.get("done")):
            rows.append({"task": c.task, "length": length, "contestant": f["contestant"],
                         "accuracy": f["accuracy"], "token_accuracy": f["token_accuracy"], "steps": f["step"],
                         "seconds": f["seconds"], "stopped_by": f["stopped_by"]})
            print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
    return rows


def sweep_table(rows: list[dict], base: LiveConfig) -> dict:
    """The shipped reference (checkpoints/live/sweep.json): the settings every row shares and the rows."""
    settings = dataclasses.asdict(base)
    for varied in ("task", "length", "contestants", "seconds"):
        settings.pop(varied)
    return {"settings": settings, "rows": sorted(rows, key=lambda r: (r["task"], r["length"]))}


def die_with(parent: int) -> None:
    """On Linux, ask to be killed when `parent` (the server that started this run) dies, so a server
    killed outright (no chance to end its runs) leaves no training behind. Asked here, after exec
    (in a server with threads, code run between fork and exec may deadlock): the server may be gone
    already, this process handed to another parent, so then it ends at once."""
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent:
        sys.exit(f"the process that started this run ({parent}) is gone")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    one = sub.add_parser("run", help="one run; NDJSON lines on stdout")
    one.add_argument("settings", nargs="?", default="{}", help="LiveConfig fields as JSON")
    one.add_argument("--nice", type=int, default=0, help="added to this process's nice value")
    one.add_argument("--parent", type=int, help="the id of the process that started the run: die with it")
    many = sub.add_parser("sweep", help="final accuracy against length, for the defaults' budget")
    many.add_argument("--lengths", default="4,8,12,16,20,24")
    many.add_argument("--task", default=LiveConfig.task)
    many.add_argument("--contestants", default=",".join(CONTESTANTS))
    many.add_argument("--json", help="write the table here (rows of other tasks and lengths there are kept)")
    args = parser.parse_args()
    if args.command == "run":
        if args.parent is not None:
            die_with(args.parent)
        if args.nice:
            os.nice(args.nice)
        settings = json.loads(args.settings)
        settings["contestants"] = tuple(settings.get("contestants", LiveConfig.contestants))
        for line in run(LiveConfig(**settings)):
            print(json.dumps(line, separators=(",", ":")), flush=True)
        return
    # the budget is the steps; the seconds guard is lifted so a busy machine cannot cut a row short
    base = LiveConfig(task=args.task, seconds=float("inf"))
    lengths = [int(n) for n in args.lengths.split(",")]
    rows = sweep(lengths, tuple(args.contestants.split(",")), base)
    if args.json and os.path.exists(args.json):
        with open(args.json) as kept:
            old = json.load(kept)["rows"]
        rows += [r for r in old if (r["task"], r["length"]) not in {(x["task"], x["length"]) for x in rows}]
    text = json.dumps(sweep_table(rows, base), indent=1)
    if args.json:
        os.makedirs(os.path.dirname(args.json), exist_ok=True)
        with open(args.json, "w") as out:
            out.write(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
