"""Teach it a pair: the training chapter's claim, live, on the reader's own sentence.

Backpropagation turns one number, the loss, into a direction for every weight. Here a private copy
of a shipped model is fine-tuned on one pair the reader writes (their French sentence, the English
they want), and every step reports what happened: the loss on the pair in nats, the size of the
gradient in each layer (every weight is told which way to move, layer by layer), and the copy's
greedy translation of the sentence with its attention map. Before and after, the copy is scored on
a fixed set of held-out test pairs (BLEU) and translates three other sentences: what it forgot
beside what it learned. With rehearsal, a few training pairs join every step, and the forgetting
shrinks.

The steps are plain Adam, dropout off (the model in eval mode: dropout would make the loss jump from
step to step for no reason the reader can see), the gradient clipped to norm 1 as in training. The
loss of a step is the mean cross-entropy per target piece (its end included) of the pair, plus that
of the rehearsal pairs when they are mixed in, so the reader's pair keeps its weight.

The held-out, example and rehearsal pairs ship in checkpoints/teach/pairs.json (a few hundred
pairs of the Tatoeba split, drawn by `python -m models.teach pairs`), so a server needs no corpus.

    python -m models.teach pairs                    # write checkpoints/teach/pairs.json from the split
    echo '{"text": "Je mange du pain.", "target": "I'm eating bread."}' | python -m models.teach run
"""

from __future__ import annotations

import argparse
import copy
import dataclasses
import json
import os
import select
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import sacrebleu
import torch
import torch.nn.functional as F
from torch import nn

from models import checkpoint
from models.batches import pad
from models.data import Pair, Split, load_split, normalize
from models.decoding import greedy
from models.evaluate import translate_all
from models.teach_config import REHEARSAL_PAIRS, TEACHABLE, TeachConfig, TeachLimits  # noqa: F401 (re-exported)
from models.tokenizer import BOS_ID, EOS_ID, UNK_ID, BPETokenizer

PAIRS = Path("teach") / "pairs.json"  # under the checkpoints folder
HELD_OUT = 64  # test pairs scored before and after
EXAMPLES = 3  # other test sentences translated before and after
REHEARSAL_POOL = 256  # training pairs rehearsal draws from
WORDS = (3, 8)  # the pairs drawn have this many French words, bounds included: short, so scoring is quick
CLIP = 1.0
BETAS = (0.9, 0.999)  # Adam's decay rates of its two moments, as in training
EPS = 1e-8


@dataclass(frozen=True)
class TeachPairs:
    """The fixed pairs every run is measured and rehearsed with."""

    held_out: list[Pair]  # scored before and after (BLEU)
    examples: list[Pair]  # translated before and after
    rehearsal: list[Pair]  # drawn from, REHEARSAL_PAIRS a step, when rehearsal is on
    split_hash: str

    @classmethod
    def read(cls, path: Path) -> TeachPairs:
        return cls.read_text(path.read_text())

    @classmethod
    def read_text(cls, text: str) -> TeachPairs:
        data = json.loads(text)
        pairs = lambda key: [Pair(fr, en) for fr, en in data[key]]  # noqa: E731
        return cls(pairs("held_out"), pairs("examples"), pairs("rehearsal"), data["split_hash"])

    def to_json(self) -> dict:
        rows = lambda pairs: [[p.fr, p.en] for p in pairs]  # noqa: E731
        return {"split_hash": self.split_hash, "held_out": rows(self.held_out), "examples": rows(self.examples),
                "rehearsal": rows(self.rehearsal)}


def pairs_text(pairs: TeachPairs) -> str:
    """pairs.json as written: a pair a line, so a change of the draw reads as a diff of pairs."""
    data = pairs.to_json()
    line = lambda pair: json.dumps(pair, ensure_ascii=False)  # noqa: E731
    parts = [f'"split_hash": {json.dumps(data["split_hash"])}']
    for key in ("held_out", "examples", "rehearsal"):
        parts.append(f'"{key}": [\n' + ",\n".join(line(p) for p in data[key]) + "\n]")
    return "{\n" + ",\n".join(parts) + "\n}\n"


def draw_pairs(split: Split) -> TeachPairs:
    """Short pairs spread evenly over the test split (held-out and examples, never the same) and
    over the training split (rehearsal)."""
    short = lambda pairs: [p for p in pairs if WORDS[0] <= len(p.fr.split()) <= WORDS[1]]  # noqa: E731
    test, train = short(split.test), short(split.train)
    test_picks = spread(test, HELD_OUT + EXAMPLES)
    return TeachPairs(test_picks[:HELD_OUT], test_picks[HELD_OUT:], spread(train, REHEARSAL_POOL), split.hash)


def spread(pairs: list[Pair], n: int) -> list[Pair]:
    """n pairs at even intervals through `pairs` (a split is ordered by the corpus: by length)."""
    picks = [pairs[i * len(pairs) // n] for i in range(n)]
    return picks[::2] + picks[1::2]  # interleaved, so the first half is as varied as the whole


@dataclass
class Reading:
    """The copy's greedy translation of the sentence, and where it looked."""

    translation: str
    pieces: list[str]  # output pieces, then the end when it ended
    map: list[list[float]] | None  # cross-attention, output piece x source piece (last layer, heads
    # averaged); None for a model without attention


@dataclass
class Evaluation:
    bleu: float  # corpus BLEU on the held-out pairs
    pairs: int
    examples: list[str]  # the translations of the example sentences


@dataclass
class TeachStart:
    """What the run starts from: the pair as pieces, the untouched copy's reading and scores."""

    model: str
    source: list[str]
    target: list[str]
    loss: float  # on the pair, before any step
    reading: Reading
    before: Evaluation
    examples: list[Pair]


@dataclass
class Layer:
    name: str  # "embed", "encoder", "decoder_layers.1", ...
    gradient: float  # the L2 norm of the layer's gradient, before clipping
    moved: float  # the L2 norm of the change the step made to the layer's weights


@dataclass
class TeachStep:
    step: int  # 1 for the first update
    loss: float  # nats per target piece of the pair, as this step's gradient was computed
    rehearsal_loss: float | None  # the same on its rehearsal pairs
    layers: list[Layer]
    reading: Reading  # after the update
    learned: bool  # the greedy translation is the target


@dataclass
class TeachEnd:
    after: Evaluation
    bleu_change: float  # after minus before
    learned_at: int | None  # the first step whose translation was the target


@dataclass
class Moments:
    """Adam's running moments, one pair of tensors per parameter, and the steps taken."""

    first: list[torch.Tensor]  # m: the gradient's running mean
    second: list[torch.Tensor]  # v: its running mean square
    steps: int = 0

    @classmethod
    def zeros(cls, params: list[torch.Tensor]) -> Moments:
        return cls([torch.zeros_like(p) for p in params], [torch.zeros_like(p) for p in params])


@torch.no_grad()
def adam_step(params: list[torch.Tensor], grads: list[torch.Tensor], moments: Moments,
              lr: float) -> list[torch.Tensor]:
    """One Adam step (Kingma & Ba 2015) from its equations, for every parameter at once (torch's
    _foreach ops: one call per operation, not per tensor):
        m = b1 m + (1 - b1) g          v = b2 v + (1 - b2) g^2
        w = w - lr m^ / (sqrt(v^) + eps),  m^ = m / (1 - b1^t),  v^ = v / (1 - b2^t)
    (the hats undo the moments' start at zero). The moments are updated in place; each weight's
    change is returned."""
    b1, b2 = BETAS
    moments.steps += 1
    t = moments.steps
    torch._foreach_lerp_(moments.first, grads, 1 - b1)  # m + (1 - b1)(g - m)
    torch._foreach_mul_(moments.second, b2)
    torch._foreach_addcmul_(moments.second, grads, grads, value=1 - b2)
    denominators = torch._foreach_sqrt(moments.second)
    torch._foreach_div_(denominators, (1 - b2**t) ** 0.5)  # sqrt(v^)
    torch._foreach_add_(denominators, EPS)
    changes = torch._foreach_div(moments.first, denominators)
    torch._foreach_mul_(changes, -lr / (1 - b1**t))
    torch._foreach_add_(params, changes)
    return changes


def clip(grads: list[torch.Tensor], norms: list[float], most: float) -> None:
    """Scale the gradients together so that their joint L2 norm is at most `most` (as training does)."""
    total = sum(n * n for n in norms) ** 0.5
    if total > most:
        torch._foreach_mul_(grads, most / (total + 1e-6))


def layer_of(name: str) -> str:
    """A parameter's layer: its first module, with a stack's index ("decoder_layers.1"), a bias
    stored beside its weights counted with them ("out_bias" -> "out")."""
    parts = name.split(".")
    layer = ".".join(parts[:2]) if len(parts) > 2 and parts[1].isdigit() else parts[0]
    return layer.removesuffix("_bias")


def norms(tensors: list[torch.Tensor]) -> list[float]:
    """Each tensor's L2 norm."""
    return torch.stack(torch._foreach_norm(tensors)).tolist()


def by_layer(names: list[str], values: list[float]) -> dict[str, float]:
    """Per-parameter L2 norms -> each layer's (the root of the sum of squares), in their order."""
    squares: dict[str, float] = {}
    for name, value in zip(names, values, strict=True):
        squares[layer_of(name)] = squares.get(layer_of(name), 0.0) + value * value
    return {k: round(v**0.5, 6) for k, v in squares.items()}


def pair_losses(model: nn.Module, src: list[list[int]], tgt: list[list[int]]) -> torch.Tensor:
    """Each pair's mean cross-entropy (nats) per target piece, its end included: (B,)."""
    tgt_in = pad([[BOS_ID, *t] for t in tgt])
    tgt_out = pad([[*t, EOS_ID] for t in tgt])  # (B, T); padding is id 0, ignored below
    logits = model(pad(src), tgt_in).logits  # (B, T, V)
    per_piece = F.cross_entropy(logits.transpose(1, 2), tgt_out, ignore_index=0, reduction="none")  # (B, T)
    return per_piece.sum(1) / (tgt_out != 0).sum(1)


@torch.no_grad()
def reading(model: nn.Module, tokenizer: BPETokenizer, src: list[int]) -> Reading:
    decoded = greedy(model, src, top_k=0)
    weights = decoded.output.attentions.get("cross")  # (1, layers, heads, T, S)
    pieces = tokenizer.pieces(decoded.tokens) + (["</s>"] if decoded.finished else [])
    grid = None
    if weights is not None:
        grid = [[round(w, 3) for w in row] for row in weights[0, -1].mean(0)[: len(pieces)].tolist()]
    return Reading(tokenizer.decode(decoded.tokens), pieces, grid)


def evaluation(model: nn.Module, tokenizer: BPETokenizer, pairs: TeachPairs) -> Evaluation:
    sources = [p.fr for p in pairs.held_out] + [p.fr for p in pairs.examples]
    out = translate_all(model, tokenizer, sources)
    held = out[: len(pairs.held_out)]
    bleu = sacrebleu.corpus_bleu(held, [[p.en for p in pairs.held_out]]).score
    return Evaluation(round(bleu, 2), len(held), out[len(pairs.held_out):])


def teach(model: nn.Module, tokenizer: BPETokenizer, config: TeachConfig, pairs: TeachPairs,
          stop: Callable[[], bool] = lambda: False) -> Iterator[TeachStart | TeachStep | TeachEnd]:
    """Fine-tune a private copy of `model` (the one given is never touched) on the config's pair:
    the start, a TeachStep per step, and the end. `stop()` true ends the steps where they stand."""
    copy_ = copy.deepcopy(model).eval()  # eval: no dropout, the same step for the same pair
    names, params = (list(x) for x in zip(*copy_.named_parameters(), strict=True))
    for p in params:
        p.requires_grad_(True)
    src = tokenizer.encode(normalize(config.text))[:500] or [UNK_ID]
    tgt = tokenizer.encode(normalize(config.target))[: copy_.config.max_len - 2]
    with torch.no_grad():
        first_loss = float(pair_losses(copy_, [src], [tgt])[0])
    before = evaluation(copy_, tokenizer, pairs)
    yield TeachStart(config.model, tokenizer.pieces(src), tokenizer.pieces(tgt), round(first_loss, 4),
                     reading(copy_, tokenizer, src), before, pairs.examples)
    moments = Moments.zeros(params)
    draw = torch.Generator().manual_seed(config.seed)
    pool = [(tokenizer.encode(p.fr), tokenizer.encode(p.en)) for p in pairs.rehearsal if config.rehearsal]
    target_text = tokenizer.decode(tgt)
    learned_at = None
    for step in range(1, config.steps + 1):
        if stop():
            break
        picks = [pool[i] for i in torch.randperm(len(pool), generator=draw)[:REHEARSAL_PAIRS].tolist()]
        losses = pair_losses(copy_, [src, *(s for s, _ in picks)], [tgt, *(t for _, t in picks)])  # (1 + R,)
        rehearsal = losses[1:].mean() if picks else None
        grads = torch.autograd.grad(losses[0] if rehearsal is None else losses[0] + rehearsal, params)
        sizes = norms(grads)
        clip(grads, sizes, CLIP)
        gradients = by_layer(names, sizes)
        moved = by_layer(names, norms(adam_step(params, grads, moments, config.learning_rate)))
        now = reading(copy_, tokenizer, src)
        learned = now.translation == target_text
        if learned and learned_at is None:
            learned_at = step
        losses = losses.detach()
        rehearsal_loss = None if rehearsal is None else round(float(rehearsal.detach()), 4)
        yield TeachStep(step, round(float(losses[0]), 4), rehearsal_loss,
                        [Layer(k, gradients[k], moved[k]) for k in gradients], now, learned)
    after = evaluation(copy_, tokenizer, pairs)
    yield TeachEnd(after, round(after.bleu - before.bleu, 2), learned_at)


def as_line(item: TeachStart | TeachStep | TeachEnd) -> dict:
    """A JSON-ready line of the stream: the dataclass, with the kind of line said by its keys."""
    line = dataclasses.asdict(item)
    if isinstance(item, TeachStart):
        line["examples"] = [{"source": p.fr, "reference": p.en} for p in item.examples]
        return {"start": line}
    if isinstance(item, TeachEnd):
        return {"end": line}
    return line


@dataclass
class Loaded:
    """What every run needs from the checkpoints folder, read once (by a spare process, before its
    run's settings come)."""

    root: Path
    tokenizer: BPETokenizer
    pairs: TeachPairs
    models: dict[str, nn.Module]  # those loaded so far

    @classmethod
    def read(cls, root: Path, models: tuple[str, ...] = ()) -> Loaded:
        loaded = cls(root, BPETokenizer.load(root / "tokenizer.json"), TeachPairs.read(root / PAIRS), {})
        for name in models:
            if (root / name).is_dir():
                loaded.model(name)
        return loaded

    def model(self, name: str) -> nn.Module:
        if name not in self.models:
            self.models[name] = checkpoint.load(self.root / name)
        return self.models[name]


def run(config: TeachConfig, loaded: Loaded, stop: Callable[[], bool] = lambda: False) -> Iterator[dict]:
    """A run on the shipped files: its lines, JSON-ready."""
    for item in teach(loaded.model(config.model), loaded.tokenizer, config, loaded.pairs, stop):
        yield as_line(item)


def wait_for_settings(idle_s: float) -> str | None:
    """The run's settings, a line of stdin; None when none came within `idle_s` seconds (a spare
    process nobody used) or stdin closed."""
    ready, _, _ = select.select([sys.stdin], [], [], idle_s)
    return sys.stdin.readline() if ready else None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    one = sub.add_parser("run", help="one run: TeachConfig as JSON on a line of stdin; NDJSON lines on stdout")
    one.add_argument("--checkpoints", default="checkpoints")
    one.add_argument("--nice", type=int, default=0, help="added to this process's nice value")
    one.add_argument("--parent", type=int, help="the id of the process that started the run: die with it")
    one.add_argument("--idle", type=float, default=600.0, help="seconds to wait for the settings, then exit")
    one.add_argument("--threads", type=int, default=1, help="torch threads (the server keeps the rest)")
    many = sub.add_parser("pairs", help="draw the held-out, example and rehearsal pairs from the split")
    many.add_argument("--checkpoints", default="checkpoints")
    many.add_argument("--data", default=None, help="path to the Tatoeba zip")
    args = parser.parse_args()
    root = Path(args.checkpoints)
    if args.command == "pairs":
        path = root / PAIRS
        os.makedirs(path.parent, exist_ok=True)
        path.write_text(pairs_text(draw_pairs(load_split(args.data))))
        print(f"wrote {path}")
        return
    from models.live import die_with  # the same care as a training run's

    if args.parent is not None:
        die_with(args.parent)
    if args.nice:
        os.nice(args.nice)
    torch.set_num_threads(max(1, args.threads))
    loaded = Loaded.read(root, (TeachConfig.model,))  # the default model: the likeliest
    settings = wait_for_settings(args.idle)
    if not settings:
        return
    for line in run(TeachConfig(**json.loads(settings)), loaded):
        print(json.dumps(line, separators=(",", ":"), ensure_ascii=False), flush=True)
    os._exit(0)  # every line is out: no half-second of torch's teardown before the server hears the end


if __name__ == "__main__":
    main()
