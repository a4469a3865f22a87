"""POST /api/translate as a function: text -> translation, optionally with the per-step top-k
next tokens (the prediction chapter) and the beam's candidates."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from app.runtime.registry import ModelRegistry
from app.runtime.text import Source
from app.schemas.translation import Alternative, Candidate, Step, TranslateRequest, Translation
from app.services.inference import GREEDY, DecodeOptions, chosen_model, decode, decode_tokens, stop_when
from app.services.page import Cancel, PageRequest
from app.services.rounding import round_sig
from models.decoding import Decoded
from models.tokenizer import EOS_ID, BPETokenizer


def translation(
    registry: ModelRegistry, name: str | None, text: str, options: DecodeOptions = GREEDY,
    cancel: threading.Event | None = None,
) -> Translation:
    """`cancel` set (the client hung up): the work is skipped, or stopped between decoder steps."""
    return registry.jobs.result(*translation_job(registry, name, text, options, cancel), cancel)


def translation_job(
    registry: ModelRegistry, name: str | None, text: str, options: DecodeOptions = GREEDY,
    cancel: threading.Event | None = None,
) -> tuple[tuple, Callable[[], Translation]]:
    """(cache key, computation) of `translation`; the text and the model name are checked here."""
    source = registry.source(text)
    entry = chosen_model(registry, name)  # None: the catalogue's default
    name = entry.name
    tokenizer, limit, stop = registry.tokenizer, registry.limits.max_target_tokens, stop_when(cancel)
    key = ("translate", name, source.text, options)
    return key, lambda: _translate(entry, tokenizer, source, options, limit, stop)


def _translate(entry, tokenizer: BPETokenizer, source: Source, options: DecodeOptions, max_tokens: int,
               stop=None) -> Translation:
    if options.beam_size == 1 and not options.top_k:  # the plain translation: no internals needed
        tokens, finished = decode_tokens(entry, source, options, max_tokens, stop)
        return Translation(**translation_fields(entry.name, tokenizer, source, tokens, finished))
    decoded = decode(entry, source, options, max_tokens, stop)
    return Translation(
        **translation_fields(entry.name, tokenizer, source, decoded.tokens, decoded.finished),
        steps=steps(tokenizer, decoded, options.top_k) if options.top_k else None,
        candidates=candidates(tokenizer, decoded) if options.beam_size > 1 else None)


def translation_fields(
    name: str, tokenizer: BPETokenizer, source: Source, tokens: list[int], finished: bool
) -> dict[str, Any]:
    """The fields of `Translation`, which every decoding response extends (as keyword arguments
    for its constructor)."""
    return {
        "model": name,
        "translation": tokenizer.decode(tokens),
        "source_tokens": source.pieces,
        "target_tokens": tokenizer.pieces(tokens),
        "finished": finished,
    }


def steps(tokenizer: BPETokenizer, decoded: Decoded, k: int) -> list[Step]:
    """Per output position: the piece chosen there (the last one is <eos>) and the k most
    probable next pieces the decoder saw. A sentence cut by the length limit chose no <eos>, so
    its last position is left out."""
    chosen = [*decoded.tokens, EOS_ID] if decoded.finished else decoded.tokens
    out = []
    for token, alternatives in zip(chosen, decoded.top_k, strict=False):
        ids, probs = zip(*alternatives[:k], strict=True)
        out.append(Step(token=tokenizer.pieces([token])[0],
                        top=[Alternative(token=piece, probability=p)
                             for piece, p in zip(tokenizer.pieces(ids), round_sig(probs), strict=True)]))
    return out


def candidates(tokenizer: BPETokenizer, decoded: Decoded) -> list[Candidate]:
    """The final beam, best first, with the scores beam search ranked them by."""
    return [
        Candidate(translation=tokenizer.decode(c.tokens), tokens=tokenizer.pieces(c.tokens),
                  log_prob=round_sig(c.log_prob), score=round_sig(c.score), finished=c.finished)
        for c in decoded.beam
    ]


def answer(registry: ModelRegistry, body: TranslateRequest, cancel: Cancel = None) -> Translation:
    return translation(registry, body.model, body.text, decode_options(body), cancel)


def decode_options(body) -> DecodeOptions:
    """A TranslateRequest's or an AttentionRequest's fields as the decoder's options."""
    return DecodeOptions(
        beam_size=getattr(body, "beam_size", 1),
        top_k=getattr(body, "top_k", 0),
        positional=body.positional,
        heads_off=tuple((h.kind, h.layer, h.head) for h in body.heads_off),
        sublayers_off=tuple(sorted(getattr(body, "sublayers_off", ()))),
    )


# the heads chapter's room to think: the Transformer whole, then with each sublayer in turn switched off
SWITCHED_OFF = ([], ["feed_forward"], ["residual_attention"], ["residual_feed_forward"])
PAGE = PageRequest("/api/translate", TranslateRequest, answer,
                   lambda v: [{"text": v.text, "model": v.with_heads, "sublayers_off": off}
                              for off in SWITCHED_OFF if v.with_heads])
