"""Greedy search for several sentences at once on one served model, each sentence its own source.

A decoding step is bound by reading the decoder's weights (bench/floor.py); a step for eight
sentences reads them once, not eight times. `greedy_many` encodes each sentence alone (the encoder's
numbers and maps are those of the sentence searched by itself), pads the encoders' outputs to the
longest source with a mask, and decodes every sentence still running in one batch per step; a
sentence that has finished, or whose caller no longer wants it, leaves the batch.

Not the same numbers bit for bit as searching each sentence alone: fbgemm's fp16 product and MKL's
fp32 one sum a one-row product in another order than a several-row one, and a padded batch takes
the step's masked path rather than the recording (graph.py). The padding itself changes nothing (its
keys get weight exactly 0, cut off each sentence's maps), but the sums differ in their last bits, so
the server runs this only when Settings.batch_compares asks (bench/README.md measures both).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch
import torch.nn.functional as F

from models.attention import mask_if_needed, padding_mask
from models.decoding import Decoded, Stop, Stopped, collected, greedy_piece
from models.outputs import select_batch
from models.seq2seq import Seq2SeqMemory
from models.tokenizer import BOS_ID, EOS_ID
from models.transformer import TransformerMemory


@dataclass
class _Row:
    """One sentence's search: what `decoding.greedy` (internals kept) or `greedy_tokens` keeps."""

    max_len: int
    stop: Stop
    internals: dict
    length: int  # source pieces
    tokens: list[int] = field(default_factory=list)
    steps: list = field(default_factory=list)
    last: int = BOS_ID
    result: object = None  # Decoded, (tokens, finished), or the Stopped it was told to stop with


def greedy_many(model, sources: list[list[int]], max_lens: list[int], stops: list[Stop],
                keep: bool = True) -> list[Decoded | tuple[list[int], bool] | Stopped]:
    """Per sentence of `sources` (unpadded ids, each searched up to its `max_lens` entry, told to
    stop by its `stops` entry): with `keep`, what `models.decoding.greedy` returns with no top-k
    (every map kept); without, what `greedy_tokens` returns. A sentence whose stop() said so before
    one of its steps gets a Stopped instead; the others go on."""
    device = model.out_bias.device
    rows, memories = [], []
    for ids, max_len, stop in zip(sources, max_lens, stops, strict=True):
        memory, internals = model.encode_with_internals(torch.tensor([ids], device=device))
        memories.append(memory)
        rows.append(_Row(max_len, stop, internals if keep else {}, len(ids)))
    memory, cache, live = _padded(memories), None, list(range(len(rows)))
    while live:
        still = [i for i in live if not _stopped(rows[i])]
        if still != live:
            memory, cache, live = _keep(memory, cache, live, still)
            if not live:
                break
        last = torch.tensor([[rows[i].last] for i in live], device=device)
        logits, weights, cache = model.decode(memory, last, cache)
        still = [i for b, i in enumerate(live) if not _advance(rows[i], logits, weights, b, keep)]
        if still != live:
            memory, cache, live = _keep(memory, cache, live, still)
    return [row.result for row in rows]


def _stopped(row: _Row) -> bool:
    if row.stop is not None and row.stop():
        row.result = Stopped()
        return True
    return False


def _advance(row: _Row, logits: torch.Tensor, weights: dict, b: int, keep: bool) -> bool:
    """Row b's step, as the one-sentence searches take it: True when its sentence has ended."""
    if keep:
        # a source's keys end at its length: the padding's (weight 0) are cut off
        maps = {kind: w[b:b + 1, ..., :row.length] if kind == "cross" else w[b:b + 1]
                for kind, w in weights.items()}
        row.steps.append((logits[b:b + 1].view(1, 1, -1), maps))
        if len(row.tokens) == row.max_len:  # cut by the limit, with the outputs after the last token kept
            return _end(row, False, keep)
    row.last = greedy_piece(logits[b])
    if row.last == EOS_ID:
        return _end(row, True, keep)
    row.tokens.append(row.last)
    return not keep and len(row.tokens) == row.max_len and _end(row, False, keep)


def _end(row: _Row, finished: bool, keep: bool) -> bool:
    if keep:
        row.result = collected(row.tokens, finished, row.steps, row.internals, 0)
    else:
        row.result = (row.tokens, finished)
    return True


def _keep(memory, cache, live: list[int], still: list[int]):
    """The batch with only the rows of `still` (a sub-list of `live`)."""
    if not still:
        return memory, cache, still
    index = torch.tensor([live.index(i) for i in still], device=_device(memory))
    return select_batch(memory, index), None if cache is None else select_batch(cache, index), still


def _device(memory) -> torch.device:
    return (memory.states if isinstance(memory, TransformerMemory) else memory.keys).device


def _padded(memories: list) -> TransformerMemory | Seq2SeqMemory:
    """One-sentence memories (none padded) as one batch, each source padded to the longest with
    zeros, and a mask when the lengths differ (None when they do not: no padding)."""
    first = memories[0]
    if isinstance(first, TransformerMemory):
        lengths = [m.states.size(1) for m in memories]
        width = max(lengths)
        kv = [tuple(torch.cat([_pad(m.cross_kv[layer][j], width, 2) for m in memories]) for j in (0, 1))
              for layer in range(len(first.cross_kv))]
        states = torch.cat([_pad(m.states, width, 1) for m in memories])
        mask = _mask(lengths, width, states.device)
        return TransformerMemory(states, None if mask is None else mask.unsqueeze(1), first.head_mask, kv,
                                 first.off)
    lengths = [m.keys.size(1) for m in memories]
    width = max(lengths)
    state = first.state
    joined = (tuple(torch.cat([m.state[j] for m in memories]) for j in range(len(state)))
              if isinstance(state, tuple) else torch.cat([m.state for m in memories]))
    projected = None if first.projected is None else torch.cat([_pad(m.projected, width, 1) for m in memories])
    keys = torch.cat([_pad(m.keys, width, 1) for m in memories])
    return Seq2SeqMemory(keys, _mask(lengths, width, keys.device), joined, projected)


def _pad(t: torch.Tensor, width: int, dim: int) -> torch.Tensor:
    missing = width - t.size(dim)
    if not missing:
        return t
    return F.pad(t, [0, 0] * (t.dim() - 1 - dim) + [0, missing])


def _mask(lengths: list[int], width: int, device) -> torch.Tensor | None:
    """(B, width), True on real source pieces; None when no sentence is padded."""
    return mask_if_needed(padding_mask(torch.tensor(lengths, device=device), width))
