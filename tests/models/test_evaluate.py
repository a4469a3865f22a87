"""Scoring by source length: `score` groups pairs with `bucket_of`, the one definition of the buckets."""

import pytest
import sacrebleu

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
    assert list(metrics) == ["bleu", "bleu_low", "bleu_high", "chrf", "pairs", "bleu_by_length"]
    assert metrics["pairs"] == len(pairs)
    rows = metrics["bleu_by_length"]
    assert [(r["bucket"], r["pairs"]) for r in rows] == [("1-5", 3), ("6-10", 2), ("16+", 2)]
    for row in rows:
        assert row["pairs"] == sum(evaluate.bucket_of(n) == row["bucket"] for n in lengths)
        assert list(row) == ["bucket", "pairs", "bleu", "bleu_low", "bleu_high", "chrf"]


SENTENCES = [("the cat sat on the mat", "the cat sat on a mat"),
             ("a dog runs in the park", "the dog runs in the park"),
             ("hello there my friend", "hello my friend"),
             ("it is raining again today", "it rains again today"),
             ("we eat bread", "we eat bread"),
             ("she reads a long book", "she is reading a long book")] * 5


def test_the_bleu_interval_is_a_bootstrap_of_corpus_bleu():
    hyps, refs = [h for h, _ in SENTENCES], [r for _, r in SENTENCES]
    bleu = sacrebleu.corpus_bleu(hyps, [refs]).score
    low, high = evaluate.bleu_interval(hyps, refs)
    assert low < bleu < high and high - low > 1  # these sentences disagree: the interval has width
    assert evaluate.bleu_interval(hyps, refs) == (low, high), "seeded: the same report every time"
    assert evaluate.bleu_interval(refs, refs) == (pytest.approx(100), pytest.approx(100))
    few_low, few_high = evaluate.bleu_interval(hyps[:6], refs[:6])
    assert few_high - few_low > high - low, "fewer sentences, a looser interval"


def test_a_sample_scores_as_sacrebleu_scores_its_sentences():
    """The interval adds up per-sentence statistics: when every sentence is the same pair, every
    sample is that corpus, and its BLEU must be sacrebleu's (brevity penalty and smoothing too)."""
    for hyp, ref in [SENTENCES[0], ("hello there", "hello my dear friend"), ("we eat bread", "we eat bread")]:
        bleu = sacrebleu.corpus_bleu([hyp] * 7, [[ref] * 7]).score
        low, high = evaluate.bleu_interval([hyp] * 7, [ref] * 7, resamples=20)
        assert low == pytest.approx(bleu) and high == pytest.approx(bleu)


def test_the_shipped_sublayer_evaluation_scores_each_switch_beside_the_shipped_model():
    """checkpoints/transformer/sublayers.json (python -m models.evaluate --sublayers): its row with
    nothing off is the shipped evaluation's BLEU on the same split, and every switch has its row."""
    from pathlib import Path

    from models import checkpoint
    from models.transformer import SUBLAYER_SWITCHES

    folder = Path("checkpoints/transformer")
    sublayers = checkpoint.read_json(folder / checkpoint.SUBLAYERS, None)
    shipped = checkpoint.read_json(folder / checkpoint.METRICS, None)
    assert sublayers["split_hash"] == shipped["split_hash"] and sublayers["pairs"] == shipped["pairs"]
    rows = {row["off"]: row for row in sublayers["variants"]}
    assert set(rows) == {None, *SUBLAYER_SWITCHES}
    assert rows[None]["bleu"] == shipped["bleu"]
    assert checkpoint.read_sublayers(folder) == sublayers["variants"]
    for row in rows.values():
        assert row["bleu_low"] <= row["bleu"] <= row["bleu_high"]
