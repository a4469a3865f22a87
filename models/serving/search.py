"""Greedy search for one sentence as the server runs it: a served model's recorded step (the
Transformer's or a recurrent model's) in a loop that makes as few calls between steps as it can.

`models.decoding.greedy_tokens` is written for any model and any batch: per step it masks the rows
that have finished, keeps a tensor of which have, asks whether all have, and joins the steps'
choices at the end. For one sentence decoded through a recorded graph (graph.py) none of that is
needed: the next piece is one argmax over the allowed pieces, read back as a Python int, and the
loop ends at <eos>. The same argmax of the same logits, so the same pieces
(tests/models/serving/test_search.py); any other case is handed to models.decoding unchanged.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import count

import torch

from models import decoding
from models.decoding import Decoded, Stop, check_stop, greedy_piece, max_target_len
from models.serving.recurrent import ServedSeq2Seq
from models.serving.step import ServedTransformer, as_recorded
from models.tokenizer import BOS_ID, EOS_ID, PAD_ID


def greedy_tokens(model, src_ids: list[int], max_len: int | None = None, stop: Stop = None,
                  **options) -> tuple[list[int], bool]:
    """What `models.decoding.greedy_tokens` returns: the greedy output ids and whether it ended
    with <eos>."""
    if not _on_graph(model, src_ids, max_len, options):
        return decoding.greedy_tokens(model, src_ids, max_len, stop, **options)
    max_len = max_len or max_target_len(model, len(src_ids))
    device = model.out_bias.device
    step = _step(model, model.encode(torch.tensor([src_ids], device=device)))
    tokens, last, cache = [], BOS_ID, None
    for position in range(max_len):
        check_stop(stop)
        logits, _, cache = step(torch.tensor([last], device=device), position, cache)  # (1, [1,] V)
        last = greedy_piece(logits)
        if last == EOS_ID:
            return tokens, True
        tokens.append(last)
    return tokens, False


def greedy(model, src_ids: list[int], max_len: int | None = None, top_k: int = 5, stop: Stop = None,
           prefix: Sequence[int] = (), **options) -> Decoded:
    """What `models.decoding.greedy` returns, every internal included, for one sentence through the
    recorded step with one argmax between steps; a prefix, options or padding: decoding's."""
    if prefix or not _on_graph(model, src_ids, max_len, options, after=1):
        return decoding.greedy(model, src_ids, max_len, top_k, stop, prefix, **options)
    max_len = max_len or max_target_len(model, len(src_ids))
    device = model.out_bias.device
    memory, internals = model.encode_with_internals(torch.tensor([src_ids], device=device))
    step = _step(model, memory)
    tokens, steps, last, cache = [], [], BOS_ID, None
    for position in count():  # up to max_len: the step after the last piece gives its <eos> or is cut
        check_stop(stop)
        logits, weights, cache = step(torch.tensor([last], device=device), position, cache)
        steps.append((logits.view(1, 1, -1), weights))
        if position == max_len:  # cut by the limit, with the outputs after the last token kept
            return decoding.collected(tokens, False, steps, internals, top_k)
        last = greedy_piece(logits)
        if last == EOS_ID:
            return decoding.collected(tokens, True, steps, internals, top_k)
        tokens.append(last)


def _step(model, memory):
    """(piece (1,), its position, cache) -> (logits, maps, the next cache): one sentence's step
    through the model's recorded graph."""
    if isinstance(model, ServedTransformer):
        return lambda piece, position, cache: model.graph(piece, position, cache, memory.cross_kv)
    return lambda piece, position, cache: model.graph(memory, piece.view(1, 1), cache)


def _on_graph(model, src_ids: list[int], max_len: int | None, options: dict, after: int = 0) -> bool:
    """The search may run through the model's recorded graph: a served model that has one, run as it
    was recorded, on one unpadded sentence (no source mask) with no options (no head switched off).
    A Transformer's search reads positions up to max_len - 1 + `after`: each must lie within its
    positional table (max_target_len keeps to it; a longer max_len may not, and the graph does not
    read the rows computed past it)."""
    served = isinstance(model, ServedTransformer | ServedSeq2Seq)
    if options or not src_ids or PAD_ID in src_ids:
        return False
    if not served or model.graph is None or not as_recorded(model):
        return False
    return not isinstance(model, ServedTransformer) or not max_len or max_len + after <= model.pe.size(0)
