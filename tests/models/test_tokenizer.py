from pathlib import Path

import pytest

from models.data import normalize
from models.tokenizer import BOS_ID, EOS_ID, PAD_ID, UNK_ID, BPETokenizer

SHIPPED = Path(__file__).resolve().parents[2] / "checkpoints" / "tokenizer.json"


@pytest.fixture(scope="module")
def tokenizer():
    return BPETokenizer.load(SHIPPED)


def test_special_ids(tokenizer):
    assert tokenizer.pieces([PAD_ID, BOS_ID, EOS_ID, UNK_ID]) == ["<pad>", "<bos>", "<eos>", "<unk>"]
    assert tokenizer.vocab_size == 8000


@pytest.mark.parametrize("text", [
    "I eat bread.", "Je mange du pain.", "Où est la gare ?", "Il fait beau aujourd'hui.",
    "« Qui est-ce ? » demanda-t-il.", "It's 5:30, isn't it?", "Tom a 3,5 millions d'euros.",
])
def test_round_trip_restores_spacing_and_punctuation(tokenizer, text):
    text = normalize(text)
    assert tokenizer.decode(tokenizer.encode(text)) == text


def test_pieces_mark_word_starts(tokenizer):
    assert tokenizer.pieces(tokenizer.encode("I eat bread.")) == ["▁I", "▁eat", "▁bread", "."]


def test_piece_ids_invert_pieces(tokenizer):
    ids = tokenizer.encode("I eat bread.")
    assert tokenizer.piece_ids(tokenizer.pieces(ids)) == ids
    assert tokenizer.piece_ids(["<eos>"]) == [EOS_ID]
    with pytest.raises(ValueError, match="eat"):
        tokenizer.piece_ids(["▁I", "eat!!"])


def test_unknown_characters_become_unk_and_decoding_drops_specials(tokenizer):
    ids = tokenizer.encode("Bonjour 🙂")
    assert UNK_ID in ids
    assert tokenizer.decode([BOS_ID, *tokenizer.encode("Bonjour"), EOS_ID, PAD_ID]) == "Bonjour"


def test_training_is_reproducible_on_small_data():
    texts = ["le chat mange", "the cat eats", "le chien dort", "the dog sleeps"] * 20
    a, b = BPETokenizer.train(texts, 60), BPETokenizer.train(texts, 60)
    assert a.hash == b.hash
    assert a.decode(a.encode("le chat dort")) == "le chat dort"
