"""Scoring by source length: `score` groups pairs with `bucket_of`, the one definition of the buckets."""

from models import evaluate
from models.data import Pair


def _pair(n_words: int) -> Pair:
    return Pair(fr=" ".join(["mot"] * n_words), en=" ".join(["word"] * n_words))


def test_bucket_edges():
    assert [evaluate.bucket_of(n) for n in (1, 5, 6, 10, 11, 15, 16, 40)] == [
        "1-5", "1-5", "6-10", "6-10", "11-15", "11-15", "16+", "16+"]


def test_score_groups_pairs_by_bucket_of():
    lengths = [20, 3, 7, 1, 5, 30, 9]  # nothing in 11-15
    pairs = [_pair(n) for n in lengths]
    metrics = evaluate.score([p.en for p in pairs], pairs)
    assert list(metrics) == ["bleu", "chrf", "pairs", "bleu_by_length"]
    assert metrics["pairs"] == len(pairs)
    rows = metrics["bleu_by_length"]
    assert [(r["bucket"], r["pairs"]) for r in rows] == [("1-5", 3), ("6-10", 2), ("16+", 2)]
    for row in rows:
        assert row["pairs"] == sum(evaluate.bucket_of(n) == row["bucket"] for n in lengths)
        assert list(row) == ["bucket", "pairs", "bleu", "chrf"]
