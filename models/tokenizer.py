"""One byte-pair-encoding vocabulary, trained on the training split, shared by all five models.

Sharing the tokenizer makes the comparison fair: every model reads and writes the same pieces.
French and English share one vocabulary (the languages share many pieces: "nation", "table").
Pieces that start a word carry "▁" so decoding can put the spaces back; punctuation is its own
piece, glued to the word before it when decoded ("I eat bread.").
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from pathlib import Path

from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

PAD, BOS, EOS, UNK = "<pad>", "<bos>", "<eos>", "<unk>"
SPECIALS = [PAD, BOS, EOS, UNK]  # ids 0, 1, 2, 3 in this order
PAD_ID, BOS_ID, EOS_ID, UNK_ID = range(4)
DEFAULT_VOCAB = 8000


class BPETokenizer:
    """Thin wrapper that fixes the special ids and the encode/decode conventions."""

    def __init__(self, tokenizer: Tokenizer):
        self.tok = tokenizer
        for token, expected in zip(SPECIALS, range(4), strict=True):
            if tokenizer.token_to_id(token) != expected:
                raise ValueError(f"tokenizer must map {token} to id {expected}")

    @property
    def vocab_size(self) -> int:
        return self.tok.get_vocab_size()

    def encode(self, text: str) -> list[int]:
        """Piece ids of a normalised sentence, without BOS/EOS."""
        return self.tok.encode(text).ids

    def pieces(self, ids: Iterable[int]) -> list[str]:
        return [self.tok.id_to_token(i) for i in ids]

    def piece_ids(self, pieces: Iterable[str]) -> list[int]:
        """Ids of pieces spelt as `pieces` returns them ("▁I", "."): the inverse of `pieces`.
        ValueError naming the pieces that are not in the vocabulary."""
        pieces = list(pieces)
        ids = [self.tok.token_to_id(p) for p in pieces]
        unknown = [p for p, i in zip(pieces, ids, strict=True) if i is None]
        if unknown:
            raise ValueError(f"not pieces of the vocabulary: {unknown}")
        return ids

    def decode(self, ids: Iterable[int]) -> str:
        """Text of piece ids; special tokens are dropped."""
        return self.tok.decode([int(i) for i in ids], skip_special_tokens=True)

    def save(self, path: str | Path) -> None:
        self.tok.save(str(path))

    @property
    def hash(self) -> str:
        return hashlib.sha256(self.tok.to_str().encode()).hexdigest()[:16]

    @classmethod
    def load(cls, path: str | Path) -> BPETokenizer:
        return cls(Tokenizer.from_file(str(path)))

    @classmethod
    def train(cls, texts: Iterable[str], vocab_size: int = DEFAULT_VOCAB) -> BPETokenizer:
        tok = Tokenizer(models.BPE(unk_token=UNK))
        tok.pre_tokenizer = pre_tokenizers.Sequence(
            [
                pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="always"),
                pre_tokenizers.Punctuation(behavior="isolated"),
            ]
        )
        tok.decoder = decoders.Metaspace(replacement="▁", prepend_scheme="always")
        trainer = trainers.BpeTrainer(
            vocab_size=vocab_size, min_frequency=2, special_tokens=SPECIALS, show_progress=False
        )
        tok.train_from_iterator(texts, trainer=trainer)
        return cls(tok)


def train_on_split(split, vocab_size: int = DEFAULT_VOCAB) -> BPETokenizer:
    """Train on both sides of the training pairs only (validation and test stay unseen)."""
    texts = (s for pair in split.train for s in (pair.fr, pair.en))
    return BPETokenizer.train(texts, vocab_size)
