"""Print the README's quality tables from the shipped checkpoints' metrics.json and config.json:
each model's BLEU and chrF (overall and by source length), then the bottleneck chapter's claim in numbers, the
attention models' BLEU advantage over the plain LSTM in each length bucket, then each BLEU's 95%
bootstrap interval (models/evaluate.py).

    .venv/bin/python scripts/quality_table.py
"""

from __future__ import annotations

from pathlib import Path

from models import checkpoint
from models.architectures import MODEL_NAMES
from models.lengths import BUCKETS

ROOT = Path(__file__).resolve().parent.parent / "checkpoints"


def by_length(metrics: dict) -> dict[str, float]:
    return {row["bucket"]: row["bleu"] for row in metrics["bleu_by_length"]}


def main() -> None:
    names = [b[0] for b in BUCKETS]
    print("| model | test BLEU | chrF | " + " | ".join(f"BLEU {n} words" for n in names)
          + " | training | steps |")
    print("|---" * (5 + len(names)) + "|")
    for name in MODEL_NAMES:
        metrics, meta = checkpoint.read_metrics(ROOT / name), checkpoint.read_meta(ROOT / name)
        if not metrics:
            print(f"| `{name}` | not evaluated |" + " |" * (3 + len(names)))
            continue
        by = by_length(metrics)
        progress = meta.get("progress", {})
        minutes = progress.get("training_seconds", 0) / 60
        print(f"| `{name}` | {metrics['bleu']:.1f} | {metrics['chrf']:.1f} | "
              + " | ".join(f"{by.get(n, float('nan')):.1f}" for n in names)
              + f" | {minutes:.0f} min | {progress.get('step', '?')} |")
    advantage_table(names)
    interval_table(names)


def interval_table(names: list[str]) -> None:
    """Each model's BLEU per bucket with its 95% bootstrap interval, where metrics.json has one."""
    print()
    print("| 95% interval of BLEU | all | " + " | ".join(f"{n} words" for n in names) + " |")
    print("|---" * (2 + len(names)) + "|")
    for name in MODEL_NAMES:
        metrics = checkpoint.read_metrics(ROOT / name)
        if not metrics or "bleu_low" not in metrics:
            continue
        rows = {row["bucket"]: row for row in metrics["bleu_by_length"]}
        spans = [metrics] + [rows[n] for n in names if n in rows]
        print(f"| `{name}` | " + " | ".join(f"{r['bleu_low']:.1f}-{r['bleu_high']:.1f}" for r in spans) + " |")


def advantage_table(names: list[str]) -> None:
    """BLEU(model) - BLEU(lstm) per length bucket, for the models that attend."""
    plain = checkpoint.read_metrics(ROOT / "lstm")
    if not plain:
        return
    base = by_length(plain)
    pairs = {row["bucket"]: row["pairs"] for row in plain["bleu_by_length"]}
    print()
    print("| BLEU gained over `lstm` | " + " | ".join(f"{n} words ({pairs[n]} pairs)" for n in names) + " |")
    print("|---" * (1 + len(names)) + "|")
    for name in ("lstm-additive", "lstm-dot", "transformer"):
        metrics = checkpoint.read_metrics(ROOT / name)
        if metrics:
            by = by_length(metrics)
            print(f"| `{name}` | " + " | ".join(f"{by[n] - base[n]:+.1f}" for n in names) + " |")


if __name__ == "__main__":
    main()
