"""User text -> normalised text and source pieces."""

from __future__ import annotations

import random

import pytest

from app.runtime.errors import InvalidTextError
from app.runtime.text import check_text, source_of


@pytest.mark.parametrize("text", ["", "   ", "\u0000\u0007", "x" * 501])
def test_check_text_rejects(text):
    with pytest.raises(InvalidTextError):
        check_text(text, 500)


def test_check_text_normalises():
    assert check_text("  \u00abBonjour\u00a0!\u00bb ", 500) == '"Bonjour !"'


def test_any_unicode_text_is_either_rejected_or_encoded(registry):
    """Random strings from the whole code space (surrogates, controls, unassigned included):
    each is a clear InvalidTextError or a non-empty list of pieces, never another exception."""
    rng = random.Random(0)
    for _ in range(300):
        text = "".join(chr(rng.randrange(0x110000)) for _ in range(rng.randrange(1, 40)))
        try:
            source = source_of(registry.tokenizer, text, 500)
        except InvalidTextError:
            continue
        assert source.ids and len(source.pieces) == len(source.ids)
