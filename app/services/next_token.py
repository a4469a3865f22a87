"""POST /api/next-token as a function: the prediction chapter's probe (models/probes/next_token.py). The loss at
each position of one teacher-forced pass over the model's own greedy translation of the text, or
over a reference translation the reader typed."""

from __future__ import annotations

import threading

from app.runtime.errors import InvalidOptionError
from app.runtime.registry import ModelRegistry
from app.schemas.next_token import NextToken, NextTokenRequest
from app.services.inference import GREEDY, SWITCHED, decode_tokens, pick_model, stop_when, with_switches
from app.services.page import Cancel, PageRequest
from app.services.rounding import round_sig
from app.services.translation import translation_fields
from models.probes.next_token import position_losses

DEFINITION = ("one teacher-forced pass: at position t the decoder reads the source and the target pieces "
              "before t, and the piece at t (<eos> last) is its label; losses[t] = -ln p(label_t), the "
              "cross-entropy in nats (natural log: 0 for probability 1, ln 2 = 0.69 for 1/2), over every "
              "piece of the vocabulary; mean_loss: their mean")


def next_token(registry: ModelRegistry, text: str, name: str | None = None, reference: str | None = None,
               cancel: threading.Event | None = None) -> NextToken:
    source = registry.source(text)
    entry = pick_model(registry, name, with_switches, SWITCHED) if name is None else registry.get(name)
    limit, stop = registry.limits.max_target_tokens, stop_when(cancel)
    target_ids = None
    if reference is not None:
        target_ids = registry.tokenizer.encode(reference.strip())
        if not target_ids:
            raise InvalidOptionError("reference", "the reference has no pieces to score", "too_short",
                                     {"min_length": 1, "actual_length": 0})
        if len(target_ids) > limit:
            raise InvalidOptionError("reference", f"the reference is {len(target_ids)} pieces; at most {limit}",
                                     "too_long", {"max_length": limit, "actual_length": len(target_ids)})

    def compute() -> NextToken:
        tokens, finished = decode_tokens(entry, source, GREEDY, limit, stop)
        scored = tokens if target_ids is None else target_ids
        result = position_losses(entry.model, source.ids, scored)
        return NextToken(**translation_fields(entry.name, registry.tokenizer, source, tokens, finished),
                         target="translation" if target_ids is None else "reference",
                         labels=registry.tokenizer.pieces(result.labels),
                         losses=[round_sig(x) for x in result.losses.tolist()],
                         mean_loss=round_sig(result.mean), definition=DEFINITION)

    key = ("next-token", entry.name, source.text, None if target_ids is None else tuple(target_ids))
    return registry.jobs.result(key, compute, cancel)


def answer(registry: ModelRegistry, body: NextTokenRequest, cancel: Cancel = None) -> NextToken:
    return next_token(registry, body.text, body.model, body.reference, cancel)


PAGE = PageRequest("/api/next-token", NextTokenRequest, answer,
                   lambda v: [{"text": v.text}] if v.with_heads else [])
