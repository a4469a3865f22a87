"""POST /api/attention as a function: the greedy translation and every attention map the model
computed while producing it, each labelled with the tokens it aligns.

Row i of a `cross` or `decoder` map is the decoder position that produced target piece i (the
query that then produced <eos> is left out). Decoder self-attention keys are the pieces the
decoder read, ["<bos>", t0, t1, ...], so those maps are square and lower-triangular.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from app.runtime.registry import ModelRegistry
from app.runtime.text import Source
from app.schemas.translation import Attention, AttentionMap
from app.services.inference import GREEDY, DecodeOptions, chosen_model, decode, stop_when
from app.services.rounding import round_sig
from app.services.translation import translation_fields
from models.decoding import Decoded
from models.outputs import ATTENTION_KINDS, ModelOutput
from models.tokenizer import BOS_ID, BPETokenizer


def attention_maps(
    registry: ModelRegistry, name: str | None, text: str, options: DecodeOptions = GREEDY,
    kinds: tuple[str, ...] = ATTENTION_KINDS, cancel: threading.Event | None = None,
) -> Attention:
    """`kinds` picks among cross, encoder and decoder maps (all by default). `cancel` set (the
    client hung up): the work is skipped, or stopped between decoder steps."""
    return registry.jobs.result(*attention_maps_job(registry, name, text, options, kinds, cancel), cancel)


def attention_maps_job(
    registry: ModelRegistry, name: str | None, text: str, options: DecodeOptions = GREEDY,
    kinds: tuple[str, ...] = ATTENTION_KINDS, cancel: threading.Event | None = None,
) -> tuple[tuple, Callable[[], Attention]]:
    """(cache key, computation) of `attention_maps`, for registry.jobs.result or registry.jobs.submit. The
    text and the model name are checked here, before anything runs."""
    source = registry.source(text)
    entry = chosen_model(registry, name)  # None: the catalogue's default
    name = entry.name

    def compute() -> Attention:
        decoded = decode(entry, source, options, registry.limits.max_target_tokens, stop_when(cancel))
        return attention_of(registry.tokenizer, name, source, decoded, kinds)

    return ("attention", name, source.text, options, kinds), compute


def attention_of(tokenizer: BPETokenizer, name: str, source: Source, decoded: Decoded,
                 kinds: tuple[str, ...] = ATTENTION_KINDS) -> Attention:
    """The answer of POST /api/attention from a decoded sentence."""
    fields = translation_fields(name, tokenizer, source, decoded.tokens, decoded.finished)
    return Attention(**fields, maps=label_maps(tokenizer, decoded.output, source, decoded.tokens, kinds))


def label_maps(
    tokenizer: BPETokenizer, output: ModelOutput, source: Source, target_ids: list[int], kinds=ATTENTION_KINDS
) -> list[AttentionMap]:
    """One map per (kind, layer, head) of `output.attentions` (batch row 0), in kinds order."""
    target = tokenizer.pieces(target_ids)
    read = tokenizer.pieces([BOS_ID, *target_ids])[: len(target_ids)]  # decoder input per row
    src = source.pieces
    axes = {"cross": (target, src), "encoder": (src, src), "decoder": (target, read)}
    maps = []
    for kind in kinds:
        if kind not in output.attentions:
            continue
        rows, cols = axes[kind]
        weights = output.attentions[kind][0, :, :, : len(rows), : len(cols)]  # (L, h, rows, cols)
        for layer, per_head in enumerate(round_sig(weights)):
            # numbers computed here, not input: not validated again one float at a time
            maps += [AttentionMap.model_construct(kind=kind, layer=layer, head=head, rows=rows, cols=cols,
                                                  weights=grid) for head, grid in enumerate(per_head)]
    return maps
