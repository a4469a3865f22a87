"""Greedy search for one sentence as the server runs it: the served Transformer's recorded step in a
loop that makes as few calls between steps as it can.

`models.decoding.greedy_tokens` is written for any model and any batch: per step it masks the rows
that have finished, keeps a tensor of which have, asks whether all have, and joins the steps'
choices at the end. For one sentence decoded through a recorded graph (graph.py) none of that is
needed: the next piece is one argmax over the allowed pieces, read back as a Python int, and the
loop ends at <eos>. The same argmax of the same logits, so the same pieces
(tests/models/serving/test_search.py); any other case is handed to models.decoding unchanged.
"""

from __future__ import annotations

import torch

from models import decoding
from models.decoding import FIRST_ALLOWED, Stop, Stopped, max_target_len
from models.serving.step import ServedTransformer
from models.tokenizer import BOS_ID, EOS_ID, PAD_ID


def greedy_tokens(model, src_ids: list[int], max_len: int | None = None, stop: Stop = None,
                  **options) -> tuple[list[int], bool]:
    """What `models.decoding.greedy_tokens` returns: the greedy output ids and whether it ended
    with <eos>."""
    # the graph's path: no options (so no head switched off), no padding (so no source mask), every
    # position within the positional table (max_target_len keeps to it; a longer max_len may not)
    if (options or not _recorded(model) or not src_ids or PAD_ID in src_ids
            or (max_len or 0) > model.pe.size(0)):
        return decoding.greedy_tokens(model, src_ids, max_len, stop, **options)
    max_len = max_len or max_target_len(model, len(src_ids))
    device = model.out_bias.device
    memory = model.encode(torch.tensor([src_ids], device=device))
    tokens, last, cache = [], BOS_ID, None
    for position in range(max_len):
        if stop is not None and stop():
            raise Stopped()
        logits, _, cache = model.graph(torch.tensor([last], device=device), position, cache,
                                       memory.cross_kv)  # (1, V)
        last = int(logits[0, FIRST_ALLOWED:].argmax()) + FIRST_ALLOWED
        if last == EOS_ID:
            return tokens, True
        tokens.append(last)
    return tokens, False


def _recorded(model) -> bool:
    """A served Transformer that decodes through its recorded graph, as inference runs it."""
    return (isinstance(model, ServedTransformer) and model.graph is not None and not model.training
            and not torch.is_grad_enabled())
