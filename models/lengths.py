"""The evaluation's length groups: a French sentence's bucket by its number of whitespace-separated
words. models/evaluate.py scores each group; the server hands the groups to the page (GET
/api/health `length_buckets`), which puts the reader's sentence in one of them."""

from __future__ import annotations

# (name, fewest words, most words; None: no upper bound), shortest first, covering 1 word and up
BUCKETS: tuple[tuple[str, int, int | None], ...] = (
    ("1-5", 1, 5), ("6-10", 6, 10), ("11-15", 11, 15), ("16+", 16, None))


def bucket_of(n_words: int) -> str:
    """The group of a sentence of `n_words` words (an empty one counts with the shortest)."""
    for name, low, high in BUCKETS:
        if low <= n_words and (high is None or n_words <= high):
            return name
    return BUCKETS[0][0]
