"""Print the README's quality table from the shipped checkpoints' metrics.json and config.json.

    .venv/bin/python scripts/quality_table.py
"""

from __future__ import annotations

from pathlib import Path

from models import checkpoint
from models.evaluate import BUCKETS
from models.registry import MODEL_NAMES

ROOT = Path(__file__).resolve().parent.parent / "checkpoints"


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
        by = {row["bucket"]: row["bleu"] for row in metrics["bleu_by_length"]}
        progress = meta.get("progress", {})
        minutes = progress.get("training_seconds", 0) / 60
        print(f"| `{name}` | {metrics['bleu']:.1f} | {metrics['chrf']:.1f} | "
              + " | ".join(f"{by.get(n, float('nan')):.1f}" for n in names)
              + f" | {minutes:.0f} min | {progress.get('step', '?')} |")


if __name__ == "__main__":
    main()
