"""POST /api/predict as a function: the prediction chapter, next-token prediction. The translation (greedy, or
beam search of 2-8), optionally continuing a forced prefix of target pieces; per step the piece
chosen, its probability and the k likeliest next pieces; with a beam, its final candidates and the
tree of hypotheses it considered (models/decoding.py's `history`)."""

from __future__ import annotations

import threading

import torch

from app.runtime.errors import InvalidOptionError, UnknownModelError
from app.runtime.registry import LoadedModel, ModelRegistry
from app.schemas.predict import BeamNodeOut, PredictedStep, Prediction, PredictRequest
from app.services.inference import stop_when, with_switches
from app.services.page import Cancel, PageRequest
from app.services.rounding import round_sig
from app.services.translation import candidates, steps, translation_fields
from models.decoding import Decoded, check_prefix, chosen_probabilities, max_target_len
from models.serving.threads import beam_search, greedy
from models.tokenizer import BPETokenizer

DEFINITION = {
    "steps": "per output position, the piece chosen there (the last one <eos> when the output finished), "
             "`forced` when it is a piece of the prefix, its `probability` under the model and the top-k "
             "next pieces (softmax over every piece but <pad> and <bos>), read off one teacher-forced pass "
             "over the output",
    "prefix": "target pieces fed to the decoder as if it had chosen them (teacher forcing), kept verbatim; the "
              "search continues after them; with a beam every hypothesis starts with the prefix and its "
              "log-probability counts",
    "score": "log_prob / ((5 + n) / 6)^0.6, n the pieces including <eos> (the GNMT length penalty): what the "
             "beam ranks by",
    "tree": "per step, the 2 x beam_size best one-piece extensions of the beam (best first); `parent`: index "
            "in the previous step's list (null at step 0: the empty hypothesis); status kept (in the beam), "
            "finished (ended with <eos>: a candidate), dropped (the beam was full, or the search ended "
            "after this step), forced (a prefix piece); `rank`: its place among `candidates`",
}


def prediction(registry: ModelRegistry, text: str, name: str | None = None, prefix: tuple[str, ...] = (),
               top_k: int = 5, beam_size: int = 1, cancel: threading.Event | None = None) -> Prediction:
    source = registry.source(text)
    entry = _model(registry, name)
    tokenizer = registry.tokenizer
    ceiling = min(registry.limits.max_target_tokens, entry.model.config.max_len - 1)
    try:
        ids = check_prefix(entry.model, tokenizer.piece_ids(prefix), ceiling)
    except ValueError as error:
        raise InvalidOptionError("prefix", str(error)) from error
    # the usual limit (that of /api/translate), stretched to a longer prefix
    max_len = min(max(max_target_len(entry.model, len(source.ids)), len(ids)), ceiling)
    stop = stop_when(cancel)

    def compute() -> Prediction:
        with torch.inference_mode():
            if beam_size == 1:
                decoded = greedy(entry.model, source.ids, max_len, top_k, stop, prefix=ids)
            else:
                decoded = beam_search(entry.model, source.ids, beam_size, max_len, top_k, stop=stop, prefix=ids)
            chosen = chosen_probabilities(decoded)
        per_step = zip(steps(tokenizer, decoded, top_k), round_sig(chosen), strict=True)
        beam = beam_size > 1
        return Prediction(**translation_fields(entry.name, tokenizer, source, decoded.tokens, decoded.finished),
                          prefix=list(prefix), beam_size=beam_size, definition=DEFINITION,
                          steps=[PredictedStep(**dict(step), forced=i < len(ids), probability=p)
                                 for i, (step, p) in enumerate(per_step)],
                          candidates=candidates(tokenizer, decoded) if beam else None,
                          tree=tree(tokenizer, decoded) if beam else None)

    key = ("predict", entry.name, source.text, tuple(ids), top_k, beam_size)
    return registry.jobs.result(key, compute, cancel)


def tree(tokenizer: BPETokenizer, decoded: Decoded) -> list[list[BeamNodeOut]]:
    """The beam's history as JSON: per step, its nodes; the final candidates' last nodes ranked."""
    rank = {c.node: i for i, c in enumerate(decoded.beam)}
    return [[BeamNodeOut(token=piece, parent=n.parent, log_prob=lp, score=sc, status=n.status,
                         rank=rank.get((s, i)))
             for i, (n, piece, lp, sc) in enumerate(zip(
                 nodes, tokenizer.pieces(n.token for n in nodes), round_sig([n.log_prob for n in nodes]),
                 round_sig([n.score for n in nodes]), strict=True))]
            for s, nodes in enumerate(decoded.history)]


def _model(registry: ModelRegistry, name: str | None) -> LoadedModel:
    """`name` (any loaded model), else the first with switches (the Transformer), else the first loaded."""
    if name is not None:
        return registry.get(name)
    models = list(registry.models.values())
    if not models:
        raise UnknownModelError("no model is loaded")
    return next((e for e in models if with_switches(e)), models[0])


def answer(registry: ModelRegistry, body: PredictRequest, cancel: Cancel = None) -> Prediction:
    return prediction(registry, body.text, body.model, tuple(body.prefix), body.top_k, body.beam_size, cancel)


PAGE = PageRequest("/api/predict", PredictRequest, answer,
                   lambda v: [{"text": v.text, "model": v.with_heads, "prefix": [], "top_k": v.top_k,
                               "beam_size": 1}]
                   if v.with_heads else [])
