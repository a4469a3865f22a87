"""POST /api/heads as a function: the heads chapter's probe (models/probes/heads.py). Per kind, layer and
head, the norm of what the head adds to the residual stream; the cross-attention heads ranked by
agreement with a recurrent model's alignment; encoder attention rollout; and, with heads switched
off, the changed translation and both translations' log-probabilities with and without them."""

from __future__ import annotations

import threading

import torch

from app.runtime.errors import InvalidOptionError
from app.runtime.registry import LoadedModel, ModelRegistry
from app.schemas.base import HeadSwitch
from app.schemas.heads import (
    AlignedHead,
    Alignment,
    HeadContribution,
    HeadEffect,
    Heads,
    HeadsRequest,
    SublayerNorm,
)
from app.services.inference import (
    ATTENDING,
    SWITCHED,
    DecodeOptions,
    attending,
    decode_tokens,
    model_options,
    pick_model,
    stop_when,
    with_switches,
)
from app.services.page import Cancel, PageRequest
from app.services.rounding import round_sig
from app.services.translation import translation_fields
from models.decoding import sequence_log_prob
from models.probes.heads import head_calls, overlap, reference_alignment, rollout
from models.tokenizer import BOS_ID

REFERENCE_SCORING = "additive"  # the reference alignment is Bahdanau's: a recurrent model scoring additively
DEFINITION = {
    "contribution": "head h's context c_h = sum_j a_ij v_hj times its slice of the output projection, "
                    "c_h W_o[:, h]^T: what the head adds to the residual stream; `norms` per query row "
                    "(encoder: source pieces; decoder, cross: the pieces the decoder read, <bos> first, "
                    "the last row being the one that produced <eos>), `mean` over rows; the heads' "
                    "contributions plus W_o's bias are the sub-layer's output",
    "alignment": "mean over the rows that produced target pieces of sum_j min(a_ij, b_ij), a the head's "
                 "cross-attention, b the reference model's, both teacher-forced on this model's translation "
                 "(the reference's own alignment when its greedy translation is the same)",
    "rollout": "Abnar & Zuidema (2020): R_l = A'_l R_(l-1), A'_l = 0.5 mean over running heads of A_l + 0.5 I, "
               "rows renormalised; it assumes the residual connection carries half of each position's vector "
               "and that heads mix linearly",
}


def heads(registry: ModelRegistry, text: str, name: str | None = None, heads_off: tuple = (),
          reference: str | None = None, cancel: threading.Event | None = None) -> Heads:
    source = registry.source(text)
    entry = pick_model(registry, name, with_switches, SWITCHED)
    ref = _reference(registry, reference)
    options = DecodeOptions(heads_off=heads_off)
    mask = model_options(entry, options).get("head_mask")  # InvalidOptionError for a head that does not exist
    limit, stop, tokenizer = registry.limits.max_target_tokens, stop_when(cancel), registry.tokenizer

    def compute() -> Heads:
        base, base_done = decode_tokens(entry, source, DecodeOptions(), limit, stop)
        tokens, finished = (base, base_done)
        if heads_off:
            tokens, finished = decode_tokens(entry, source, options, limit, stop)
        calls = head_calls(entry.model, source.ids, tokens, mask)
        rows = {"encoder": source.pieces, "decoder": tokenizer.pieces([BOS_ID, *tokens]),
                "cross": tokenizer.pieces([BOS_ID, *tokens])}
        per_head = []
        for call in calls:
            norms = call.contributions.norm(dim=-1)  # (h, T_q)
            for head in range(norms.size(0)):
                per_head.append(HeadContribution(
                    kind=call.kind, layer=call.layer, head=head, off=not bool(call.on[head]),
                    norms=round_sig(norms[head]), mean=round_sig(float(norms[head].mean())),
                    max_weight=round_sig(float(call.weights[head].max(-1).values.mean()))))
        encoder = [c for c in calls if c.kind == "encoder"]
        rolled = rollout(torch.stack([c.weights for c in encoder]), torch.stack([c.on for c in encoder]))
        effect = {label: _effect(entry, source, ids, done, mask, tokenizer)
                  for label, ids, done in (("original", base, base_done), ("changed", tokens, finished))
                  } if heads_off else None
        return Heads(**translation_fields(entry.name, tokenizer, source, tokens, finished),
                     heads_off=[HeadSwitch(kind=k, layer=la, head=h) for k, la, h in heads_off],
                     definition=DEFINITION, rows=rows, contributions=per_head,
                     sublayer_norms=[SublayerNorm(kind=c.kind, layer=c.layer,
                                                  mean=round_sig(float(c.output.norm(dim=-1).mean())))
                                     for c in calls],
                     rollout=round_sig(rolled),
                     alignment=_alignment(ref, source, tokens, calls, tokenizer, limit, stop),
                     effect=effect)

    key = ("heads", entry.name, source.text, heads_off, ref.name if ref else None)
    return registry.jobs.result(key, compute, cancel)


def _effect(entry: LoadedModel, source, ids: list[int], done: bool, mask, tokenizer) -> HeadEffect:
    """One translation, scored by the model with every head and with `mask`'s heads off."""
    with torch.inference_mode():
        scores = [sequence_log_prob(entry.model, source.ids, ids, done, **kwargs)
                  for kwargs in ({}, {"head_mask": mask})]
    return HeadEffect(translation=tokenizer.decode(ids), tokens=tokenizer.pieces(ids),
                      log_prob_all_heads=round_sig(scores[0]), log_prob_heads_off=round_sig(scores[1]))


def _reference(registry: ModelRegistry, name: str | None) -> LoadedModel | None:
    """The reference alignment's model: `name` (a recurrent model with attention), else the first
    loaded recurrent model that scores additively (Bahdanau's), else the first recurrent model with
    attention, else None. Chosen by what the models have inside, never by their names."""
    if name is not None:
        try:
            return pick_model(registry, name, attending, ATTENDING)
        except InvalidOptionError as error:
            raise InvalidOptionError("reference", str(error)) from error
    candidates = [e for e in registry.models.values() if attending(e)]
    additive = [e for e in candidates if e.capabilities.attention == REFERENCE_SCORING]
    return (additive or candidates or [None])[0]


def _alignment(ref: LoadedModel | None, source, tokens: list[int], calls, tokenizer, limit,
               stop) -> Alignment | None:
    if ref is None or not tokens:
        return None
    own, _ = decode_tokens(ref, source, DecodeOptions(), limit, stop)
    b = reference_alignment(ref.model, source.ids, tokens)[: len(tokens)]
    ranking = [AlignedHead(layer=c.layer, head=head, off=not bool(c.on[head]),
                           score=round_sig(overlap(c.weights[head, : len(tokens)], b)))
               for c in calls if c.kind == "cross" for head in range(c.weights.size(0))]
    ranking.sort(key=lambda r: r.score, reverse=True)
    return Alignment(reference=ref.name, reference_translation=tokenizer.decode(own),
                     same_translation=own == tokens, reference_map=round_sig(b), ranking=ranking)


def answer(registry: ModelRegistry, body: HeadsRequest, cancel: Cancel = None) -> Heads:
    off = tuple((h.kind, h.layer, h.head) for h in body.heads_off)
    return heads(registry, body.text, body.model, off, body.reference, cancel)


PAGE = PageRequest("/api/heads", HeadsRequest, answer,
                   lambda v: [{"text": v.text, "model": v.with_heads, "heads_off": []}] if v.with_heads else [])
