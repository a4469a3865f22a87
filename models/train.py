"""Train one of the five models on the Tatoeba training split, on a wall-clock budget.

    python -m models.train --model transformer --minutes 30 [--resume] [--device auto|cpu|cuda]

Several processes (GPUs, or CPU machines) train one model together with PyTorch's own engine:

    torchrun --nproc_per_node 4 -m models.train --model transformer --minutes 30

Each rank takes every world_size-th batch, DistributedDataParallel averages the gradients (NCCL on
GPUs, gloo on CPUs), and rank 0 evaluates and writes the checkpoint.

Backpropagation (the training chapter) with the usual care: AdamW, a linear warm-up then inverse-square-root
decay, label smoothing, gradient clipping, batches grouped by length under a token budget. The
validation loss and BLEU are measured at intervals; the best model so far is written to
`checkpoints/NAME/` (fp16 safetensors + JSON). The full training state (fp32 weights, optimizer,
position in the epoch) is written next to it so a killed run continues with `--resume`.
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import os
import platform
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import sacrebleu
import torch
import torch.distributed as dist
import torch.nn.functional as F
from safetensors.torch import load_file, save_file
from tqdm import tqdm

from models import checkpoint
from models.architectures import MODEL_NAMES, count_parameters, default_config, initialized
from models.batches import EncodedPair, collate, encode_pairs, token_batches
from models.config import ModelConfig
from models.data import Pair, load_split
from models.device import choose_device
from models.evaluate import translate_all
from models.tokenizer import PAD_ID, BPETokenizer, train_on_split

log = logging.getLogger("models.train")
STATE_TENSORS, STATE_JSON = "train_state.safetensors", "train_state.json"
# fp32 weights kept beside a run, never shipped: snapshots for `models.snapshots` to reduce, and the
# last evaluations' weights for `models.average`
SNAPSHOTS_FP32, AVERAGING = "snapshots-fp32", "averaging"


@dataclass
class TrainingSettings:
    """Training settings, stored in config.json so a run can be repeated exactly."""

    max_tokens: int = 4000  # padded tokens per batch
    lr: float = 1e-3  # peak learning rate, reached after the warm-up
    warmup: int = 200  # steps of linear warm-up
    weight_decay: float = 0.01
    label_smoothing: float = 0.1
    clip: float = 1.0  # max global gradient norm
    max_len: int = 60  # pairs with a side longer than this many pieces are left out of training
    eval_minutes: float = 6.0  # wall-clock time between validation runs
    bleu_pairs: int = 300  # validation pairs translated for BLEU at each evaluation
    seed: int = 0


@dataclass
class Progress:
    """Where training stands; saved as JSON beside the optimizer state."""

    step: int = 0
    epoch: int = 0
    batch_in_epoch: int = 0
    tokens: int = 0
    seconds: float = 0.0  # training wall time over all runs (evaluation included)
    best_bleu: float = -1.0
    best_loss: float = float("inf")


RECURRENT_LR = 2e-3  # peak learning rate of the four recurrent models (the Transformer's: TrainingSettings.lr)


def lr_at(step: int, s: TrainingSettings) -> float:
    step = max(step, 1)
    return s.lr * min(step / s.warmup, math.sqrt(s.warmup / step))


@dataclass
class Ranks:
    """This process's place among the training processes (one process: rank 0 of 1)."""

    rank: int = 0
    world: int = 1

    @property
    def leader(self) -> bool:
        return self.rank == 0


def init_distributed(device_name: str) -> tuple[Ranks, torch.device]:
    """Join the process group torchrun describes in the environment, if there is one."""
    device = choose_device(device_name)
    world = int(os.environ.get("WORLD_SIZE", "1"))
    if world == 1:
        return Ranks(), device
    rank = int(os.environ["RANK"])
    if device.type == "cuda":
        device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", "0")))
        torch.cuda.set_device(device)
    dist.init_process_group("nccl" if device.type == "cuda" else "gloo")
    return Ranks(rank, world), device


def agree(ranks: Ranks, values: list[float], device) -> list[float]:
    """Sum a few numbers over all ranks so every rank takes the same decisions (eval, stop)."""
    if ranks.world == 1:
        return values
    t = torch.tensor(values, dtype=torch.float64, device=device)
    dist.all_reduce(t)
    return t.tolist()


def hardware(device: torch.device) -> str:
    if device.type == "cuda":
        return torch.cuda.get_device_name(device)
    return f"{platform.machine()} CPU, {os.cpu_count()} cores, {torch.get_num_threads()} torch threads"


def get_tokenizer(root: Path, split) -> BPETokenizer:
    """The shared tokenizer: trained once on the training split, then reused by every model."""
    path = root / "tokenizer.json"
    if path.exists():
        return BPETokenizer.load(path)
    log.info("training the BPE tokenizer on %d training pairs", len(split.train))
    tokenizer = train_on_split(split)
    root.mkdir(parents=True, exist_ok=True)
    tokenizer.save(path)
    return tokenizer


def loss_fn(logits: torch.Tensor, target: torch.Tensor, smoothing: float) -> torch.Tensor:
    """Summed cross-entropy over real target tokens (padding ignored)."""
    return F.cross_entropy(
        logits.reshape(-1, logits.size(-1)), target.reshape(-1),
        ignore_index=PAD_ID, label_smoothing=smoothing, reduction="sum",
    )


@torch.inference_mode()
def validation_loss(model, pairs, device, max_tokens: int) -> float:
    model.eval()
    total, count = 0.0, 0
    for idx in token_batches(pairs, max_tokens, shuffle=False):
        batch = collate([pairs[i] for i in idx]).to(device)
        total += loss_fn(model(batch.src, batch.tgt_in).logits, batch.tgt_out, 0.0).item()
        count += batch.n_tokens
    model.train()
    return total / max(count, 1)


def save_state(folder: Path, model, optimizer, progress: Progress, curve: list) -> None:
    """fp32 weights + AdamW moments as safetensors, counters as JSON: resumable, no pickle."""
    tensors = {f"model.{k}": v.detach().cpu().contiguous() for k, v in model.state_dict().items()}
    opt = optimizer.state_dict()
    for idx, state in opt["state"].items():
        for key, value in state.items():
            tensors[f"opt.{idx}.{key}"] = torch.as_tensor(value).detach().cpu().contiguous()
    tmp = folder / (STATE_TENSORS + ".tmp")
    save_file(tensors, str(tmp))
    tmp.replace(folder / STATE_TENSORS)
    checkpoint.write_json(folder / STATE_JSON, {
        "progress": asdict(progress), "param_groups": opt["param_groups"],
    })
    checkpoint.write_json(folder / checkpoint.CURVE, curve)


def warm_progress(meta: dict) -> Progress:
    """Counters from a shipped checkpoint's config.json (the epoch restarts at its beginning)."""
    saved = meta.get("progress", {})
    return Progress(
        step=saved.get("step", 0), epoch=saved.get("epoch", 0), tokens=saved.get("tokens", 0),
        seconds=saved.get("training_seconds", 0.0), best_bleu=saved.get("valid_bleu", -1.0),
        best_loss=saved.get("valid_loss", float("inf")),
    )


def load_state(folder: Path, model, optimizer) -> Progress:
    tensors = load_file(str(folder / STATE_TENSORS))
    meta = checkpoint.read_json(folder / STATE_JSON)
    model.load_state_dict({k[6:]: v for k, v in tensors.items() if k.startswith("model.")})
    state: dict[int, dict] = {}
    for key, value in tensors.items():
        if key.startswith("opt."):
            _, idx, name = key.split(".", 2)
            state.setdefault(int(idx), {})[name] = value
    optimizer.load_state_dict({"state": state, "param_groups": meta["param_groups"]})
    return Progress(**meta["progress"])


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", required=True, choices=MODEL_NAMES)
    p.add_argument("--minutes", type=float, required=True, help="wall-clock budget of this run")
    p.add_argument("--resume", action="store_true", help="continue from the saved training state")
    p.add_argument("--device", default="auto", choices=["auto", "cpu", "cuda"])
    p.add_argument("--checkpoints", default="checkpoints", help="folder of checkpoint folders")
    p.add_argument("--data", default=None, help="path to the Tatoeba zip")
    p.add_argument("--config", default=None, help="JSON overrides of the model config")
    p.add_argument("--limit", type=int, default=None, help="train on the first N pairs only")
    p.add_argument("--snapshots", default="", help="comma-separated steps at which to evaluate and keep "
                   "the fp32 weights (the training snapshots the scrubber shows)")
    p.add_argument("--keep", type=int, default=0, help="keep the fp32 weights of the last K evaluations "
                   "(for checkpoint averaging, models.average)")
    for field, default in asdict(TrainingSettings()).items():
        p.add_argument(f"--{field.replace('_', '-')}", type=type(default),
                       default=None if field == "lr" else default)
    args = p.parse_args(argv)
    args.snapshot_steps = sorted({int(step) for step in args.snapshots.split(",") if step.strip()})
    if args.lr is None:
        args.lr = TrainingSettings.lr if args.model == "transformer" else RECURRENT_LR
    return args


def main(argv: list[str] | None = None) -> Progress:
    return run(parse_args(argv))[1]


@dataclass
class TrainingRun:
    """What one run carries from its set-up to its end: model, optimizer, data and counters."""

    name: str
    settings: TrainingSettings
    ranks: Ranks
    device: torch.device
    folder: Path  # checkpoints/NAME
    tokenizer: BPETokenizer
    model: torch.nn.Module
    trainee: torch.nn.Module  # the model, or its DistributedDataParallel wrapper
    optimizer: torch.optim.Optimizer
    train_pairs: list[EncodedPair]
    valid_pairs: list[EncodedPair]
    bleu_pairs: list[Pair]  # validation pairs translated for BLEU
    meta: dict  # config.json besides the model config and "progress"
    progress: Progress
    curve: list[dict]
    snapshot_steps: tuple[int, ...] = ()  # evaluate and keep the fp32 weights after these steps
    keep: int = 0  # evaluations whose fp32 weights are kept for averaging


@dataclass
class Clock:
    """This run's wall-clock budget and the sums kept between two evaluations."""

    budget: float  # seconds
    seconds_before: float  # training seconds of the earlier runs
    start: float
    last_eval: float
    loss: float = 0.0  # summed training loss since the last evaluation
    tokens: int = 0  # target tokens since the last evaluation
    speed_tokens: int = 0  # target tokens since the start of this run


def run(args: argparse.Namespace) -> tuple[torch.nn.Module, Progress]:
    """Train for `args.minutes`; returns the (unwrapped) model and where training stands."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s", stream=sys.stderr)
    settings = TrainingSettings(**{k: getattr(args, k) for k in asdict(TrainingSettings())})
    ranks, device = init_distributed(args.device)
    torch.manual_seed(settings.seed)  # same seed on every rank: identical initial weights
    training = set_up(args, settings, ranks, device)
    clock = train_for(training, args.minutes * 60)
    if ranks.leader:
        seconds = time.perf_counter() - clock.start
        log.info("%s: %.0f target tokens/s over %.1f minutes; best valid BLEU %.2f", args.model,
                 clock.speed_tokens / seconds, seconds / 60, training.progress.best_bleu)
    if ranks.world > 1:
        dist.destroy_process_group()
    return training.model, training.progress


def set_up(args: argparse.Namespace, settings: TrainingSettings, ranks: Ranks, device) -> TrainingRun:
    """Data, model and optimizer: fresh, or restored by --resume (see `restore`)."""
    root = Path(args.checkpoints)
    folder = root / args.model
    folder.mkdir(parents=True, exist_ok=True)
    split = load_split(args.data)
    tokenizer = get_tokenizer(root, split)
    train_pairs = encode_pairs(tokenizer, split.train[: args.limit], settings.max_len)
    valid_pairs = encode_pairs(tokenizer, split.valid)
    resuming = args.resume and (folder / STATE_TENSORS).exists()
    warm_start = args.resume and not resuming and (folder / checkpoint.WEIGHTS).exists()
    model = initialized(model_config(args, folder, tokenizer.vocab_size, resuming or warm_start), settings.seed)
    initial_digest = checkpoint.weights_digest(model)  # before any restore: the run's true start
    model = model.to(device).train()
    optimizer = torch.optim.AdamW(
        model.parameters(), lr=settings.lr, betas=(0.9, 0.98), weight_decay=settings.weight_decay
    )
    progress, curve = restore(args.model, folder, model, optimizer, resuming, warm_start)
    trainee = model
    if ranks.world > 1:
        trainee = torch.nn.parallel.DistributedDataParallel(model, device_ids=[device.index] if
                                                            device.type == "cuda" else None)
    if ranks.leader:
        log.info("%s: %s parameters on %s x%d, %d training pairs", args.model,
                 f"{count_parameters(model):,}", hardware(device), ranks.world, len(train_pairs))
    meta = {"name": args.model, "split_hash": split.hash, "tokenizer_hash": tokenizer.hash,
            "parameters": count_parameters(model), "training": asdict(settings),
            checkpoint.INITIAL_SHA256: initial_digest}
    return TrainingRun(args.model, settings, ranks, device, folder, tokenizer, model, trainee, optimizer,
                       train_pairs, valid_pairs, split.valid[: settings.bleu_pairs], meta, progress, curve,
                       tuple(getattr(args, "snapshot_steps", ())), getattr(args, "keep", 0))


def model_config(args: argparse.Namespace, folder: Path, vocab_size: int, restoring: bool) -> ModelConfig:
    """The checkpoint's own config when restoring one, else the default with --config on top."""
    if restoring:
        return checkpoint.config_from_dict(checkpoint.read_meta(folder)["model"])
    config = default_config(args.model, vocab_size)
    if args.config:
        config = type(config)(**{**asdict(config), **json.loads(args.config)})
    return config


def restore(name: str, folder: Path, model, optimizer, resuming: bool,
            warm_start: bool) -> tuple[Progress, list[dict]]:
    """Progress and curve of the run to continue, with its weights (and optimizer state) loaded.

    `resuming`: the full training state is there. `warm_start`: only the fp16 checkpoint is (a
    machine without the uncommitted training state); the optimizer starts fresh.
    """
    if resuming:
        progress = load_state(folder, model, optimizer)
        log.info("resumed %s at step %d (epoch %d)", name, progress.step, progress.epoch)
    elif warm_start:
        model.load_state_dict(checkpoint.load(folder).state_dict())
        progress = warm_progress(checkpoint.read_meta(folder))
        log.info("no training state: warm start of %s from its checkpoint (step %d)", name, progress.step)
    else:
        return Progress(), []
    return progress, checkpoint.read_curve(folder)


def train_for(training: TrainingRun, budget: float) -> Clock:
    """Train epoch after epoch until the budget (seconds) is spent, evaluating on the way."""
    start = time.perf_counter()
    clock = Clock(budget, training.progress.seconds, start, start)
    bar = tqdm(total=int(budget), unit="s", desc=training.name, disable=not training.ranks.leader,
               mininterval=2 if sys.stderr.isatty() else 30,
               bar_format="{desc} {percentage:3.0f}%|{bar:20}| {elapsed}<{remaining} {postfix}")
    while True:
        for idx in epoch_batches(training)[training.progress.batch_in_epoch :]:
            loss, n_tokens = train_step(training, idx)
            eval_due, stop = count_step(training, clock, bar, loss, n_tokens)
            snapshot = training.progress.step in training.snapshot_steps
            if eval_due or stop or snapshot:
                evaluate_on_leader(training, clock, snapshot)
            if stop:
                bar.close()
                return clock
        training.progress.epoch += 1
        training.progress.batch_in_epoch = 0


def epoch_batches(training: TrainingRun) -> list[list[int]]:
    """This rank's batches of the current epoch: every world-th one, the same number on each rank."""
    ranks = training.ranks
    batches = token_batches(training.train_pairs, training.settings.max_tokens,
                            seed=training.settings.seed + training.progress.epoch)
    return batches[: len(batches) // ranks.world * ranks.world][ranks.rank :: ranks.world]


def train_step(training: TrainingRun, idx: list[int]) -> tuple[torch.Tensor, int]:
    """One optimizer step on one batch; returns the summed loss and the batch's target tokens."""
    settings, optimizer = training.settings, training.optimizer
    batch = collate([training.train_pairs[i] for i in idx]).to(training.device)
    for group in optimizer.param_groups:
        group["lr"] = lr_at(training.progress.step + 1, settings)
    logits = training.trainee(batch.src, batch.tgt_in).logits
    loss = loss_fn(logits, batch.tgt_out, settings.label_smoothing)
    optimizer.zero_grad(set_to_none=True)
    (loss / batch.n_tokens).backward()  # DDP averages these gradients over the ranks
    torch.nn.utils.clip_grad_norm_(training.model.parameters(), settings.clip)
    optimizer.step()
    return loss, batch.n_tokens


def count_step(training: TrainingRun, clock: Clock, bar: tqdm, loss: torch.Tensor, n_tokens: int):
    """Add a step to the counters, summed over the ranks; returns (evaluation due, budget spent)."""
    now = time.perf_counter()
    elapsed = now - clock.start
    eval_due, stop, n_tokens, loss_sum = agree(training.ranks, [
        float(now - clock.last_eval >= training.settings.eval_minutes * 60), float(elapsed >= clock.budget),
        float(n_tokens), loss.item(),
    ], training.device)
    progress = training.progress
    progress.step += 1
    progress.batch_in_epoch += 1
    progress.tokens += int(n_tokens)
    progress.seconds = clock.seconds_before + elapsed
    clock.loss += loss_sum
    clock.tokens += int(n_tokens)
    clock.speed_tokens += int(n_tokens)
    bar.n = min(int(elapsed), int(clock.budget))
    bar.set_postfix_str(f"step {progress.step} loss {clock.loss / clock.tokens:.3f} "
                        f"{clock.speed_tokens / max(elapsed, 1e-9):,.0f} tok/s")
    return bool(eval_due), bool(stop)


def evaluate_on_leader(training: TrainingRun, clock: Clock, snapshot: bool = False) -> None:
    """Rank 0 evaluates and saves while the others wait; the loss sums start again."""
    if training.ranks.leader:
        evaluate_and_save(training, clock.loss / clock.tokens)
        keep_weights(training, snapshot)
    if training.ranks.world > 1:
        dist.barrier()
    clock.loss, clock.tokens, clock.last_eval = 0.0, 0, time.perf_counter()


def evaluate_and_save(training: TrainingRun, train_loss: float) -> None:
    """Validation loss and BLEU as a curve point, the checkpoint if they are the best so far, and the
    training state."""
    model, progress, bleu_pairs = training.model, training.progress, training.bleu_pairs
    val_loss = validation_loss(model, training.valid_pairs, training.device, training.settings.max_tokens)
    hyps = translate_all(model, training.tokenizer, [p.fr for p in bleu_pairs])
    bleu = sacrebleu.corpus_bleu(hyps, [[p.en for p in bleu_pairs]]).score
    training.curve.append({
        "step": progress.step, "epoch": progress.epoch, "tokens": progress.tokens,
        "seconds": round(progress.seconds, 1), "train_loss": round(train_loss, 4),
        "valid_loss": round(val_loss, 4), "valid_bleu": round(bleu, 2),
    })
    log.info("step %d: train %.3f valid %.3f BLEU %.2f (%s -> %s)", progress.step, train_loss,
             val_loss, bleu, bleu_pairs[0].fr, hyps[0])
    if (bleu, -val_loss) > (progress.best_bleu, -progress.best_loss):
        progress.best_bleu, progress.best_loss = bleu, val_loss
        checkpoint.save(model, training.folder, {**training.meta, "progress": {
            "step": progress.step, "epoch": progress.epoch, "tokens": progress.tokens,
            "training_seconds": round(progress.seconds, 1),
            "hardware": f"{hardware(training.device)} x{training.ranks.world}",
            "valid_bleu": round(bleu, 2), "valid_loss": round(val_loss, 4),
        }})
    save_state(training.folder, model, training.optimizer, progress, training.curve)


def keep_weights(training: TrainingRun, snapshot: bool) -> None:
    """The fp32 weights just evaluated: as a snapshot (with its curve point) and/or among the last
    `keep` evaluations' weights that `models.average` can average."""
    point = training.curve[-1]
    state = training.model.state_dict()
    weights = {k: v.detach().to("cpu", torch.float32).contiguous() for k, v in state.items()}
    if snapshot:
        folder = training.folder / SNAPSHOTS_FP32
        folder.mkdir(exist_ok=True)
        save_file(weights, str(folder / f"step-{point['step']}.safetensors"))
        checkpoint.write_json(folder / f"step-{point['step']}.json", point)
    if training.keep:
        folder = training.folder / AVERAGING
        folder.mkdir(exist_ok=True)
        save_file(weights, str(folder / f"step-{point['step']}.safetensors"))
        checkpoint.write_json(folder / f"step-{point['step']}.json", point)
        kept = sorted(folder.glob("step-*.safetensors"), key=lambda f: int(f.stem.split("-")[1]))
        for old in kept[: -training.keep]:
            old.unlink()
            old.with_suffix(".json").unlink(missing_ok=True)


if __name__ == "__main__":
    main()
