"""POST /api/scores as a function: the attention chapter's probe (models/probes/scores.py) at one output
position of the greedy translation: raw scores, the model's softmax and a softmax at another
temperature, and the blend they make, as JSON."""

from __future__ import annotations

import math
import threading

from app.runtime.errors import InvalidOptionError
from app.runtime.registry import ModelRegistry
from app.schemas.scores import Blend, Scores, ScoresRequest
from app.services.inference import ATTENDING, GREEDY, attending, decode_tokens, pick_model, stop_when
from app.services.page import Cancel, PageRequest
from app.services.rounding import round_sig
from app.services.translation import translation_fields
from models.probes.recurrence import most_varying
from models.probes.scores import reweight, score_step, spread

UNITS = 32  # units of the encoder states shown in the blend
RULE = (f"the {UNITS} units (all when there are fewer) whose h_j varies most over the source pieces "
        "(population variance), in ascending unit order")
DEFINITION = ("e_j = score(s, h_j): s the decoder state that produced output piece `row`, h_j the "
              "encoder state after source piece j; weights = softmax(e), the model's own; context = "
              "sum_j weights_j h_j; reweighted = softmax(e / temperature); entropy = -sum_j p_j ln p_j in "
              "nats (0: all weight on one piece; ln S, `max_entropy`: uniform)")


def attention_scores(registry: ModelRegistry, text: str, name: str | None = None, row: int = 0,
                     temperature: float = 1.0, cancel: threading.Event | None = None) -> Scores:
    """The attention of `name` (default: the first recurrent model with attention) when it
    produced piece `row` of its greedy translation of `text`; a row past the translation's end is
    an InvalidOptionError (the request's schema keeps row >= 0 and the temperature in range)."""
    source = registry.source(text)
    entry = pick_model(registry, name, attending, ATTENDING, "no recurrent model with attention is loaded")
    limit, stop = registry.limits.max_target_tokens, stop_when(cancel)

    def compute() -> Scores:
        tokens, finished = decode_tokens(entry, source, GREEDY, limit, stop)
        if row >= len(tokens):
            raise InvalidOptionError("row", f"the translation has {len(tokens)} pieces: row must be 0 to "
                                            f"{len(tokens) - 1}, got {row}")
        scored = score_step(entry.model, source.ids, tokens, row)
        own, other = spread(scored.weights), reweight(scored.scores, temperature)
        units = most_varying(scored.states, UNITS)
        result = translation_fields(entry.name, registry.tokenizer, source, tokens, finished)
        blend = Blend(rule=RULE, units=units.tolist(), hidden_size=scored.states.size(1),
                      states=round_sig(scored.states[:, units]), context=round_sig(scored.context[units]),
                      state_norms=round_sig(scored.states.norm(dim=-1)),
                      context_norm=round_sig(float(scored.context.norm())))
        return Scores(**result, row=row, query_token=result["target_tokens"][row],
                      attention=entry.capabilities.attention, formula=f"e_j = {scored.formula}",
                      definition=DEFINITION, scores=round_sig(scored.scores),
                      weights=round_sig(own.weights), entropy=round_sig(own.entropy),
                      max_weight=round_sig(own.max_weight), temperature=temperature,
                      reweighted=round_sig(other.weights), reweighted_entropy=round_sig(other.entropy),
                      reweighted_max_weight=round_sig(other.max_weight), entropy_unit="nats",
                      max_entropy=round_sig(math.log(len(source.ids))), blend=blend)

    return registry.jobs.result(("scores", entry.name, source.text, row, temperature), compute, cancel)


def answer(registry: ModelRegistry, body: ScoresRequest, cancel: Cancel = None) -> Scores:
    return attention_scores(registry, body.text, body.model, body.row, body.temperature, cancel)


PAGE = PageRequest("/api/scores", ScoresRequest, answer,
                   lambda v: [{"text": v.text, "model": name, "row": 0, "temperature": 1}
                              for name in v.aligning])
