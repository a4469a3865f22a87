"""Score a trained model on the test split: sacrebleu BLEU and chrF, cased and detokenised.

    python -m models.evaluate --model transformer [--split test] [--limit N] [--device cpu]
    python -m models.evaluate --model transformer --sublayers

Writes `checkpoints/NAME/metrics.json`, overall and by source length in words (1-5, 6-10, 11-15,
16+): the bottleneck chapter's claim is that the no-attention models fall behind as sentences grow. Each BLEU
comes with the 95% interval of a bootstrap over its sentences (`bleu_low`, `bleu_high`): a bucket of
26 sentences cannot rank models a point apart, and the page shows how loosely to read it.

`--sublayers` scores the Transformer again with each of its sub-layer switches off in every layer
(models.transformer.SUBLAYER_SWITCHES: the feed-forward networks, the residual path around the
attention, around the feed-forward), each beside the shipped model, into `checkpoints/NAME/sublayers.json`
(the "room to think" figures of the heads chapter).
"""

from __future__ import annotations

import argparse
import logging
import time
from pathlib import Path

import sacrebleu
import torch
from sacrebleu.metrics import BLEU

from models import checkpoint
from models.batches import pad
from models.data import Pair, load_split
from models.decoding import greedy_batch
from models.lengths import BUCKETS, bucket_of
from models.tokenizer import UNK_ID, BPETokenizer
from models.transformer import SUBLAYER_SWITCHES

log = logging.getLogger("models.evaluate")


@torch.inference_mode()
def translate_all(model, tokenizer: BPETokenizer, sources: list[str], max_tokens: int = 3000,
                  **options) -> list[str]:
    """Greedy translations of many sentences, batched by length (results in input order); `options`
    go to the model's encode (a Transformer's `off`)."""
    was_training = model.training
    model.eval()
    device = next(model.parameters()).device
    ids = [tokenizer.encode(s)[:500] or [UNK_ID] for s in sources]  # an empty line still decodes
    order = sorted(range(len(ids)), key=lambda i: len(ids[i]))
    out: list[str] = [""] * len(ids)
    start = 0
    while start < len(order):
        end = start + 1
        while end < len(order) and len(ids[order[end]]) * (end - start + 1) <= max_tokens:
            end += 1
        batch = order[start:end]
        hyps = greedy_batch(model, pad([ids[i] for i in batch]).to(device), **options)
        for i, hyp in zip(batch, hyps, strict=True):
            out[i] = tokenizer.decode(hyp)
        start = end
    model.train(was_training)
    return out


RESAMPLES = 1000  # bootstrap samples behind each BLEU interval


def bleu_interval(hypotheses: list[str], references: list[str], resamples: int = RESAMPLES,
                  seed: int = 0) -> tuple[float, float]:
    """The 2.5th and 97.5th percentiles of corpus BLEU over `resamples` samples, drawn with
    replacement, of these sentences. BLEU sums n-gram statistics over sentences, so each sentence's
    are counted once and a sample's BLEU comes from their sums (sacrebleu's corpus_bleu: the same
    tokenisation and exponential smoothing)."""
    metric = BLEU()
    per_sentence = [metric.corpus_score([h], [[r]]) for h, r in zip(hypotheses, references, strict=True)]
    stats = torch.tensor([[*s.counts, *s.totals, s.sys_len, s.ref_len] for s in per_sentence],
                         dtype=torch.float64)  # (N, 10)
    generator = torch.Generator().manual_seed(seed)
    picks = torch.randint(len(per_sentence), (resamples, len(per_sentence)), generator=generator)
    sums = stats[picks].sum(dim=1).long().tolist()  # (resamples, 10)
    scores = sorted(BLEU.compute_bleu(s[:4], s[4:8], s[8], s[9], smooth_method="exp").score for s in sums)
    return scores[int(0.025 * resamples)], scores[min(int(0.975 * resamples), resamples - 1)]


def _bleu(hypotheses: list[str], references: list[str]) -> dict:
    low, high = bleu_interval(hypotheses, references)
    return {"bleu": round(sacrebleu.corpus_bleu(hypotheses, [references]).score, 2),
            "bleu_low": round(low, 2), "bleu_high": round(high, 2)}


def score(hypotheses: list[str], pairs: list[Pair]) -> dict:
    refs = [p.en for p in pairs]
    result = {
        **_bleu(hypotheses, refs),
        "chrf": round(sacrebleu.corpus_chrf(hypotheses, [refs]).score, 2),
        "pairs": len(pairs),
    }
    groups: dict[str, list[int]] = {name: [] for name, _, _ in BUCKETS}
    for i, p in enumerate(pairs):
        groups[bucket_of(len(p.fr.split()))].append(i)
    by_length = []
    for name, idx in groups.items():
        if not idx:
            continue
        bucket_hyps = [hypotheses[i] for i in idx]
        bucket_refs = [refs[i] for i in idx]
        by_length.append({
            "bucket": name,
            "pairs": len(idx),
            **_bleu(bucket_hyps, bucket_refs),
            "chrf": round(sacrebleu.corpus_chrf(bucket_hyps, [bucket_refs]).score, 2),
        })
    result["bleu_by_length"] = by_length
    return result


def evaluate(folder: Path, tokenizer: BPETokenizer, pairs: list[Pair], device: str = "cpu") -> dict:
    model = checkpoint.load(folder, device)
    start = time.perf_counter()
    hyps = translate_all(model, tokenizer, [p.fr for p in pairs])
    metrics = score(hyps, pairs)
    metrics["decode_seconds"] = round(time.perf_counter() - start, 1)
    metrics["examples"] = [
        {"source": p.fr, "reference": p.en, "hypothesis": h}
        for p, h in list(zip(pairs, hyps, strict=True))[:10]
    ]
    return metrics


def evaluate_sublayers(folder: Path, tokenizer: BPETokenizer, pairs: list[Pair], device: str = "cpu") -> dict:
    """The Transformer's test BLEU and chrF with all sub-layers (`shipped`), then with each switch of
    SUBLAYER_SWITCHES off in every layer, each with the seconds its decoding took."""
    model = checkpoint.load(folder, device)
    refs = [p.en for p in pairs]
    variants = []
    for off in (None, *SUBLAYER_SWITCHES):
        start = time.perf_counter()
        hyps = translate_all(model, tokenizer, [p.fr for p in pairs], **({"off": (off,)} if off else {}))
        variants.append({"off": off, **_bleu(hyps, refs),
                         "chrf": round(sacrebleu.corpus_chrf(hyps, [refs]).score, 2),
                         "decode_seconds": round(time.perf_counter() - start, 1)})
    return {"pairs": len(pairs), "decoding": "greedy", "variants": variants}


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", required=True)
    parser.add_argument("--checkpoints", default="checkpoints")
    parser.add_argument("--data", default=None, help="path to the Tatoeba zip")
    parser.add_argument("--split", default="test", choices=["test", "valid"])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--limit", type=int, default=None, help="score only the first N pairs")
    parser.add_argument("--sublayers", action="store_true",
                        help="score the Transformer with each sub-layer switch off (writes sublayers.json)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")

    split = load_split(args.data)
    root = Path(args.checkpoints)
    folder = root / args.model
    meta = checkpoint.read_meta(folder)
    if meta.get("split_hash") not in (None, split.hash):
        raise SystemExit(f"{args.model} was trained on split {meta['split_hash']}, not {split.hash}")
    tokenizer = BPETokenizer.load(root / "tokenizer.json")
    pairs = getattr(split, args.split)[: args.limit]
    if args.sublayers:
        result = {"split": args.split, "split_hash": split.hash,
                  **evaluate_sublayers(folder, tokenizer, pairs, args.device)}
        if args.limit is None and args.split == "test":
            checkpoint.write_json(folder / checkpoint.SUBLAYERS, result)
        for row in result["variants"]:
            log.info("  off %-22s BLEU %6.2f [%.2f, %.2f] chrF %.2f (%.1f s)", row["off"] or "(none)",
                     row["bleu"], row["bleu_low"], row["bleu_high"], row["chrf"], row["decode_seconds"])
        return result
    metrics = {"split": args.split, "split_hash": split.hash, "decoding": "greedy",
               **evaluate(folder, tokenizer, pairs, args.device)}
    if args.limit is None and args.split == "test":
        checkpoint.write_json(folder / checkpoint.METRICS, metrics)
    log.info("%s: BLEU %.2f [%.2f, %.2f] chrF %.2f on %d %s pairs", args.model, metrics["bleu"],
             metrics["bleu_low"], metrics["bleu_high"], metrics["chrf"], metrics["pairs"], args.split)
    for row in metrics["bleu_by_length"]:
        log.info("  %-6s %5d pairs  BLEU %6.2f [%.2f, %.2f]", row["bucket"], row["pairs"], row["bleu"],
                 row["bleu_low"], row["bleu_high"])
    return metrics


if __name__ == "__main__":
    main()
