"""How one alignment is learned: at every point of a model's snapshot timeline (initialization,
stored snapshots, shipped weights), the cross-attention weight the output word puts on the source
word it translates, teacher-forced on the reference so the row exists at every step.

    .venv/bin/python scripts/snapshot_alignment.py --model transformer \
        [--text "Je mange du pain." --reference "I eat bread." --source-word pain --target-word bread]

Prints, per step: validation BLEU, the greedy translation at that step, and the weight per cross
head (layer.head, counted from 1), with its largest and its mean over heads.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from models import checkpoint, snapshots  # noqa: E402
from models.architectures import initialized  # noqa: E402
from models.decoding import greedy_tokens  # noqa: E402
from models.tokenizer import BOS_ID, BPETokenizer  # noqa: E402


def weights_at(model, src: list[int], tgt: list[int], row: int, col: int) -> list[float]:
    """Every cross head's weight of target row `row` on source column `col`, layer by layer."""
    with torch.inference_mode():
        output = model(torch.tensor([src]), torch.tensor([[BOS_ID, *tgt]]))
    cross = output.attentions["cross"][0]  # (L, h, T, S)
    return cross[:, :, row, col].flatten().tolist()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", default="transformer")
    p.add_argument("--checkpoints", default=str(ROOT / "checkpoints"))
    p.add_argument("--text", default="Je mange du pain.")
    p.add_argument("--reference", default="I eat bread.")
    p.add_argument("--source-word", default="pain")
    p.add_argument("--target-word", default="bread")
    args = p.parse_args()
    folder = Path(args.checkpoints) / args.model
    tokenizer = BPETokenizer.load(Path(args.checkpoints) / "tokenizer.json")
    meta = checkpoint.read_meta(folder)
    src, tgt = tokenizer.encode(args.text), tokenizer.encode(args.reference)
    col = tokenizer.pieces(src).index("▁" + args.source_word)
    row = tokenizer.pieces(tgt).index("▁" + args.target_word)
    shipped = checkpoint.load(folder)
    start = initialized(shipped.config, meta["training"]["seed"]).eval()
    index = snapshots.read_index(folder)["steps"]
    points = [(p, start if p["step"] == 0 else snapshots.load_snapshot(folder, p["step"])) for p in index]
    kept = meta["progress"]
    points.append(({"step": kept["step"], "valid_bleu": kept["valid_bleu"]}, shipped))
    c = shipped.config
    heads = [f"{layer + 1}.{head + 1}" for layer in range(getattr(c, "n_decoder_layers", 1))
             for head in range(getattr(c, "n_heads", 1))]
    print(f"{args.model}: weight of '{args.target_word}' on '{args.source_word}' "
          f"({args.text} -> {args.reference})")
    print("| step | valid BLEU | greedy translation | " + " | ".join(heads) + " | largest | mean |")
    print("|---" * (len(heads) + 5) + "|")
    for point, model in points:
        w = weights_at(model, src, tgt, row, col)
        with torch.inference_mode():
            translation = tokenizer.decode(greedy_tokens(model, src)[0])
        cells = " | ".join(f"{x:.3f}" for x in w)
        print(f"| {point['step']} | {point['valid_bleu']} | {translation} | {cells} | {max(w):.3f} | "
              f"{sum(w) / len(w):.3f} |")


if __name__ == "__main__":
    main()
