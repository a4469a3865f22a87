"""User text -> the normalised sentence and its source pieces, exactly as the corpus was prepared."""

from __future__ import annotations

import re
from dataclasses import dataclass

from app.runtime.errors import InvalidTextError
from models.data import normalize
from models.tokenizer import UNK_ID, BPETokenizer

# JSON may carry "\ud800" escapes that are no character at all; the tokenizer cannot take them.
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


@dataclass(frozen=True)
class Source:
    text: str  # normalised
    ids: list[int]  # source piece ids, no BOS/EOS; never empty
    pieces: list[str]


def check_text(text: str, max_chars: int) -> str:
    """The contract's limit (1 to max_chars characters after trimming), then the normalised text.

    The limit is checked again after normalisation: NFKC can expand one character into many
    (U+FDFA becomes 18), and the Transformer has a fixed number of positions.
    """
    trimmed = _LONE_SURROGATE.sub("\ufffd", text).strip()
    if not 1 <= len(trimmed) <= max_chars:
        raise InvalidTextError(
            f"must be 1 to {max_chars} characters after trimming white space, got {len(trimmed)}")
    normal = normalize(trimmed)
    if not normal:
        raise InvalidTextError("is empty once control characters and white space are removed")
    if len(normal) > max_chars:
        raise InvalidTextError(f"is {len(normal)} characters once normalised (NFKC); the limit is {max_chars}")
    return normal


def source_of(tokenizer: BPETokenizer, text: str, max_chars: int) -> Source:
    """Checked, normalised text and its pieces. A text the tokenizer cannot split into any piece
    still gets one <unk>, so every accepted text translates."""
    normal = check_text(text, max_chars)
    ids = tokenizer.encode(normal) or [UNK_ID]
    return Source(normal, ids, tokenizer.pieces(ids))
