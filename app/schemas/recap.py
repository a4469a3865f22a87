"""POST /api/recap (the recap, the story's last chapter): the recap rows measured on the reader's sentence."""

from __future__ import annotations

from pydantic import Field

from app.schemas.base import Response


class RecapRow(Response):
    """One row of the recap: its chapter's one number on the reader's sentence, in a sentence."""

    chapter: str = Field(description="the chapter the row recaps, by its slug (\"gradients\"), the name its "
                                     "link gives it (`/?ch=gradients`); the rows come in the story's order")
    part: str | None = Field(None, description="which of the chapter's measurements the row states, where it "
                                               "has more than one: \"lookup\", the attention chapter's one "
                                               "line; null for the chapter's main one")
    text: str = Field(description="the row's sentence, with the number measured on the text (English)")
    said: dict[str, str] = Field(description="the same sentence in each language of the page (en, fr): the "
                                             "catalogue's message for the row, its numbers written by that "
                                             "language's rules")


class Recap(Response):
    """POST /api/recap: the recap rows that depend on the text, for the chapters whose models are loaded.
    (The text is not echoed: a client knows what it sent.)"""

    rows: list[RecapRow]
