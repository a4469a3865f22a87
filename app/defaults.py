"""What the page shows before the reader changes anything, in one place: the server computes these
answers ahead (app/services/ahead.py), the recap measures with them (app/services/recap.py), and
GET /api/health serves them to the page (static/js/catalog.js), so the three never disagree.
A leaf: it imports nothing of the app."""

from __future__ import annotations

TEXT = "Je mange du pain."  # the sentence in the box when the page opens
LENGTH = 80  # the gradients chapter's input length, in pieces (at most the server's max_gradient_length)
SEED = 1  # the order chapter's first shuffle
TOP_K = 5  # the prediction chapter's likeliest pieces per step


def length(max_gradient_length: int) -> int:
    """The gradients chapter's opening length on a server whose longest gradient input is
    `max_gradient_length`."""
    return min(LENGTH, max_gradient_length)
