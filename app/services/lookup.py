"""POST /api/lookup as a function: the one line softmax(Q K^T / sqrt(d_k)) V recomputed by hand on
one head of the Transformer's first encoder layer (models/probes/lookup.py), and how far its mix of
values is from the head's output in the model's own pass."""

from __future__ import annotations

import threading

from app.runtime.errors import InvalidOptionError
from app.runtime.registry import ModelRegistry
from app.schemas.lookup import Lookup, LookupRequest
from app.services.inference import SWITCHED, pick_model, with_switches
from app.services.page import Cancel, PageRequest
from app.services.rounding import round_sig
from models.probes.lookup import lookup as measure

DEFINITION = ("the first encoder layer's normed source X (pieces x d_model) is read three times: Q = X W_Q, "
              "K = X W_K, V = X W_V, each this head's d_k columns; scores = Q K^T / sqrt(d_k); weights = "
              "softmax of each row; the head's answer is weights V, one mix of values per query piece. "
              "Queries, keys and values all come from the source: self-attention")


def lookup(registry: ModelRegistry, text: str, name: str | None = None, head: int = 0,
           cancel: threading.Event | None = None) -> Lookup:
    source = registry.source(text)
    entry = pick_model(registry, name, with_switches, SWITCHED)
    heads = entry.model.encoder_layers[0].self_attn.n_heads
    if head >= heads:
        raise InvalidOptionError("head", f"{entry.name} has {heads} heads a layer: head must be 0 to "
                                         f"{heads - 1}, got {head}")

    def compute() -> Lookup:
        found = measure(entry.model, source.ids, head)
        S = len(source.ids)
        return Lookup(model=entry.name, source_tokens=source.pieces, layer=0, head=head, heads=found.heads,
                      d_model=found.d_model, d_k=found.d_k,
                      shapes={name: [S, found.d_k] for name in ("Q", "K", "V")}, definition=DEFINITION,
                      scores=round_sig(found.scores), weights=round_sig(found.weights),
                      weights_difference=round_sig(float((found.weights - found.model_weights).abs().max())),
                      max_abs_difference=round_sig(float((found.mix - found.model_output).abs().max())),
                      output_scale=round_sig(float(found.model_output.abs().max())))

    return registry.jobs.result(("lookup", entry.name, source.text, head), compute, cancel)


def answer(registry: ModelRegistry, body: LookupRequest, cancel: Cancel = None) -> Lookup:
    return lookup(registry, body.text, body.model, body.head, cancel)


PAGE = PageRequest("/api/lookup", LookupRequest, answer, lambda v: [{"text": v.text, "head": 0}])
