"""POST /api/recurrence as a function: the recurrence chapter's probe (models/probes/recurrence.py) on one
sentence, a readable subset of the hidden units, as JSON."""

from __future__ import annotations

import threading

from app.runtime.errors import InvalidOptionError, UnknownModelError
from app.runtime.registry import LoadedModel, ModelRegistry
from app.schemas.recurrence import Recurrence, RecurrenceRequest
from app.services.page import Cancel, PageRequest
from app.services.rounding import round_sig
from models.probes.recurrence import EQUATIONS, most_varying, read

UNITS = 32  # hidden units shown
RULE = (f"the {UNITS} units (all when there are fewer) whose h_t varies most over the sentence's "
        "tokens (population variance), in ascending unit order")


def recurrence(registry: ModelRegistry, text: str, name: str | None = None,
               cancel: threading.Event | None = None) -> Recurrence:
    """The encoder's hidden state after each piece of `text`, for model `name` (default: the
    plain RNN, see `recurrent_model`)."""
    source = registry.source(text)
    entry = recurrent_model(registry, name)

    def compute() -> Recurrence:
        reading = read(entry.model, source.ids)
        units = most_varying(reading.states, UNITS)
        equation = EQUATIONS[entry.capabilities.architecture]
        return Recurrence(model=entry.name, tokens=source.pieces, equation=equation,
                          hidden_size=reading.states.size(1), rule=RULE, units=units.tolist(),
                          states=round_sig(reading.states[:, units]), change=round_sig(reading.change),
                          norm=round_sig(reading.norm))

    return registry.jobs.result(("recurrence", entry.name, source.text), compute, cancel)


def recurrent_model(registry: ModelRegistry, name: str | None) -> LoadedModel:
    """`name`, which must read through a recurrence; None: the first loaded plain recurrent model
    (no attention, no gates: the Elman RNN), else the first recurrent one."""
    if name is not None:
        entry = registry.get(name)
        if not entry.capabilities.recurrent:
            raise InvalidOptionError("model", f"{name!r} has no recurrent encoder")
        return entry
    recurrent = [e for e in registry.models.values() if e.capabilities.recurrent]
    plain = [e for e in recurrent if not e.capabilities.cross_attention and not e.capabilities.gates]
    if not recurrent:
        raise UnknownModelError(f"no recurrent model is loaded; loaded: {', '.join(registry.names) or 'none'}")
    return (plain or recurrent)[0]


def answer(registry: ModelRegistry, body: RecurrenceRequest, cancel: Cancel = None) -> Recurrence:
    return recurrence(registry, body.text, body.model, cancel)


PAGE = PageRequest("/api/recurrence", RecurrenceRequest, answer, lambda v: [{"text": v.text}])
