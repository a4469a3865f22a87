"""Checkpoint averaging: the mean of the weights of a run's last evaluations, kept if it translates
the validation split better than the checkpoint training kept.

    python -m models.average --model transformer [--checkpoints checkpoints] [--last 6]

`models.train --keep K` leaves the fp32 weights of its last K evaluations in `NAME/averaging/`.
Each candidate (the kept checkpoint, then the mean of the last k = 1..K of those) is scored by
greedy BLEU on the whole validation split, never on test; the best is written as the checkpoint,
its config.json saying which steps it averages. The scores go to `NAME/averaging/report.json`.
"""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

import sacrebleu
import torch
from safetensors.torch import load_file

from models import checkpoint
from models.architectures import build
from models.batches import encode_pairs
from models.data import load_split
from models.evaluate import translate_all
from models.tokenizer import BPETokenizer
from models.train import AVERAGING, TrainingSettings, validation_loss

log = logging.getLogger("models.average")


def kept_steps(folder: Path) -> list[int]:
    """The steps whose fp32 weights training kept for averaging, oldest first."""
    return sorted(int(p.stem.split("-")[1]) for p in (folder / AVERAGING).glob("step-*.safetensors"))


def mean_of(folder: Path, steps: list[int]) -> dict[str, torch.Tensor]:
    """The element-wise mean of the weights kept at `steps`."""
    total: dict[str, torch.Tensor] = {}
    for step in steps:
        for name, tensor in load_file(str(folder / AVERAGING / f"step-{step}.safetensors")).items():
            total[name] = total.get(name, 0) + tensor.double()
    return {name: (tensor / len(steps)).float() for name, tensor in total.items()}


def bleu_of(model, tokenizer: BPETokenizer, pairs) -> float:
    hyps = translate_all(model, tokenizer, [p.fr for p in pairs])
    return sacrebleu.corpus_bleu(hyps, [[p.en for p in pairs]]).score


def average(name: str, checkpoints: Path, last: int, data: str | None = None, pairs: int | None = None) -> dict:
    """Score the candidates on the first `pairs` validation pairs (None: all), keep the best."""
    folder = checkpoints / name
    meta = checkpoint.read_meta(folder)
    tokenizer = BPETokenizer.load(checkpoints / "tokenizer.json")
    valid = load_split(data).valid[:pairs]
    kept = checkpoint.load(folder)
    candidates = {"kept": (kept, [meta["progress"]["step"]])}
    steps = kept_steps(folder)
    for k in range(1, min(last, len(steps)) + 1):
        model = build(kept.config).eval()
        model.load_state_dict(mean_of(folder, steps[-k:]))
        candidates[f"last {k}"] = (model, steps[-k:])
    scores = {}
    for label, (model, averaged) in candidates.items():
        scores[label] = {"steps": averaged, "valid_bleu": round(bleu_of(model, tokenizer, valid), 2)}
        log.info("%s %s (steps %s): validation BLEU %.2f", name, label, averaged, scores[label]["valid_bleu"])
    best = max(scores, key=lambda label: scores[label]["valid_bleu"])
    report = {"pairs": len(valid), "scores": scores, "chosen": best}
    if best != "kept":
        write(folder, meta, candidates[best], tokenizer, valid)
    (folder / AVERAGING).mkdir(exist_ok=True)
    checkpoint.write_json(folder / AVERAGING / "report.json", report)
    return report


def write(folder: Path, meta: dict, candidate, tokenizer: BPETokenizer, valid) -> None:
    """Save the averaged model as the checkpoint; its progress is the last step it averages, with
    the validation loss and BLEU measured as training measures them (the curve's pairs)."""
    model, steps = candidate
    before = meta["progress"]
    last = {p["step"]: p for p in checkpoint.read_curve(folder)}.get(steps[-1], {})
    settings = TrainingSettings(**meta.get("training", {}))  # as the run measured its curve
    bleu_pairs = valid[: settings.bleu_pairs]
    pairs = encode_pairs(tokenizer, valid)
    loss = validation_loss(model, pairs, torch.device("cpu"), settings.max_tokens)
    progress = {**before, "step": steps[-1], "epoch": last.get("epoch", before.get("epoch")),
                "tokens": last.get("tokens", before.get("tokens")),
                "training_seconds": last.get("seconds", before.get("training_seconds")),
                "valid_bleu": round(bleu_of(model, tokenizer, bleu_pairs), 2), "valid_loss": round(loss, 4),
                "averaged_steps": steps}
    rest = {k: v for k, v in meta.items() if k not in ("model", checkpoint.SHA256)}
    checkpoint.save(model, folder, {**rest, "progress": progress})


def main(argv: list[str] | None = None) -> dict:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s", stream=sys.stderr)
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", required=True)
    p.add_argument("--checkpoints", default="checkpoints")
    p.add_argument("--last", type=int, default=6, help="average up to this many of the last evaluations")
    p.add_argument("--data", default=None, help="path to the Tatoeba zip")
    p.add_argument("--pairs", type=int, default=None, help="score on the first N validation pairs")
    args = p.parse_args(argv)
    return average(args.model, Path(args.checkpoints), args.last, args.data, args.pairs)


if __name__ == "__main__":
    main()
