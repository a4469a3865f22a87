"""Sentence pairs -> padded id tensors, grouped by length under a token budget.

Sorting by length before batching means little padding, so nearly every multiply-add the CPU
does is on a real token; the budget (not a sentence count) keeps each step's memory flat.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

import torch

from models.data import Pair
from models.tokenizer import BOS_ID, EOS_ID, PAD_ID, BPETokenizer


@dataclass
class EncodedPair:
    src: list[int]  # source pieces, no specials
    tgt: list[int]  # target pieces, no specials


@dataclass
class Batch:
    src: torch.Tensor  # (B, S) padded source ids
    tgt_in: torch.Tensor  # (B, T) BOS + target: what the decoder reads
    tgt_out: torch.Tensor  # (B, T) target + EOS: what it must predict
    n_tokens: int  # real target tokens (loss terms)

    def to(self, device) -> Batch:
        return Batch(self.src.to(device), self.tgt_in.to(device), self.tgt_out.to(device), self.n_tokens)


def encode_pairs(tokenizer: BPETokenizer, pairs: list[Pair], max_len: int | None = None) -> list[EncodedPair]:
    srcs = tokenizer.tok.encode_batch([p.fr for p in pairs])
    tgts = tokenizer.tok.encode_batch([p.en for p in pairs])
    out = [EncodedPair(s.ids, t.ids) for s, t in zip(srcs, tgts, strict=True)]
    if max_len is not None:
        out = [p for p in out if 0 < len(p.src) <= max_len and 0 < len(p.tgt) < max_len]
    return out


def pad(rows: list[list[int]]) -> torch.Tensor:
    width = max(len(r) for r in rows)
    return torch.tensor([r + [PAD_ID] * (width - len(r)) for r in rows], dtype=torch.long)


def collate(pairs: list[EncodedPair]) -> Batch:
    return Batch(
        src=pad([p.src for p in pairs]),
        tgt_in=pad([[BOS_ID, *p.tgt] for p in pairs]),
        tgt_out=pad([[*p.tgt, EOS_ID] for p in pairs]),
        n_tokens=sum(len(p.tgt) + 1 for p in pairs),
    )


def token_batches(
    pairs: list[EncodedPair], max_tokens: int, shuffle: bool = True, seed: int = 0
) -> list[list[int]]:
    """Indices of pairs grouped into batches whose padded size (rows x longest side) fits the
    budget. With `shuffle`, lengths get a little noise and batch order is random, per seed."""
    rng = random.Random(seed)

    def length(i: int) -> float:
        p = pairs[i]
        return max(len(p.src), len(p.tgt) + 1) + (rng.random() if shuffle else 0.0)

    order = sorted(range(len(pairs)), key=length)
    batches, current, longest = [], [], 0
    for i in order:
        size = max(len(pairs[i].src), len(pairs[i].tgt) + 1)
        if current and max(longest, size) * (len(current) + 1) > max_tokens:
            batches.append(current)
            current, longest = [], 0
        current.append(i)
        longest = max(longest, size)
    if current:
        batches.append(current)
    if shuffle:
        rng.shuffle(batches)
    return batches
