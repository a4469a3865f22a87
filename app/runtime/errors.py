"""The errors a request can meet, in one place, each with the status the API answers it with
(app/main.py maps them): the services raise them, the routes never catch them. `Abandoned` is never
answered: its client is gone."""

from __future__ import annotations

from app.schemas.base import NonFiniteAnswerError  # 503, raised where an answer is written (a leaf, below)

__all__ = ["Abandoned", "BusyError", "InvalidOptionError", "InvalidTextError", "NoResultsError",
           "NonFiniteAnswerError", "UnknownModelError", "UnknownSnapshotError"]


class UnknownModelError(LookupError):
    """404: a model name that is not loaded; the message lists the names that are."""


class UnknownSnapshotError(LookupError):
    """404: a model without training snapshots, or a step it has none at; the message lists the steps."""


class NoResultsError(LookupError):
    """404: the long-lag experiment has not been run (python -m models.long_lag)."""


class InvalidTextError(ValueError):
    """422: text the models cannot read: empty, or too long, once trimmed and normalised."""


class InvalidOptionError(ValueError):
    """422: an option the chosen model does not have (e.g. a head switch on a recurrent model).
    `kind` and `ctx` are the 422's `type` and `ctx`, for a client that words the refusal itself (in
    pydantic's terms where one fits: "too_long" with its max_length and actual_length)."""

    def __init__(self, field: str, message: str, kind: str = "value_error", ctx: dict | None = None):
        super().__init__(message)
        self.field = field
        self.kind = kind
        self.ctx = ctx


class BusyError(RuntimeError):
    """429: what the request needs is taken; `busy` says what (its message begins with it),
    `retry_after`: seconds until it should be free."""

    def __init__(self, busy: str, retry_after: int):
        super().__init__(f"{busy}; ask again in {retry_after} s")
        self.retry_after = retry_after


class Abandoned(Exception):
    """Never answered: nobody wants this answer any more (its client hung up, or typed on), so it was
    not computed, or its search stopped."""
