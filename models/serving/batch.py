"""Greedy search for many sentences on one served model, stepped together: continuous batching.

A decoding step is bound by reading the decoder's weights (bench/floor.py); a step for eight
sentences reads them once, not eight times. A `Pool` holds the sentences one model is decoding now
and takes one step for all of them at a time, the scheduling serving engines call iteration-level or
continuous batching (Orca; vLLM): new sentences are encoded (a Transformer's joining at one step
together, padded under a mask) and join at the next step; a sentence that ends, or whose caller no
longer wants it, leaves after the step that ended it, its answer ready at once.

Sentences in one step differ in their source and in how far they have decoded. The sources are
padded to the longest, with a mask; a recurrent decoder's state is per row anyway; a Transformer's
cached keys and values are left-padded, so that every sentence's newest key is the last column, and a
mask hides the padding from each query (step.decode_rows). Padding gets weight exactly 0 and is cut
off each sentence's maps, so a sentence's numbers are its own; what differs from searching it alone
is the order in which a many-row product sums (fbgemm's fp16 and MKL's fp32 products), within float
rounding (tests/models/serving/test_batch.py; bench/fidelity.py counts it on the test split). When
every sentence is at the same position with no padding (one sentence alone, above all), the step
is the model's own `decode`, the recorded graph (graph.py), bit for bit the one-sentence search.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F

from models.attention import mask_if_needed, padding_mask
from models.decoding import Decoded, Stop, Stopped, collected, greedy_choices
from models.outputs import select_batch
from models.seq2seq import Seq2SeqMemory
from models.serving.step import decode_rows
from models.tokenizer import BOS_ID, EOS_ID, PAD_ID
from models.transformer import Transformer, TransformerMemory


@dataclass
class Sentence:
    """What a Pool is asked to decode: source ids (unpadded), the output limit, the stop test asked
    before each step, whether every map is kept (else only the ids), and the caller's handle."""

    ids: list[int]
    max_len: int
    stop: Stop = None
    keep: bool = True
    handle: Hashable | None = None


@dataclass
class _Row:
    """One sentence's search: what `decoding.greedy` (internals kept) or `greedy_tokens` keeps."""

    sentence: Sentence
    internals: dict
    tokens: list[int] = field(default_factory=list)
    # per step: the whole step's logits and maps, this row's index in them and the pieces it had read;
    # its own part is cut out when it ends with an answer (`_own`)
    steps: list = field(default_factory=list)
    last: int = BOS_ID
    read: int = 0  # decoder positions read so far
    result: object = None  # Decoded, (tokens, finished), or the Stopped it was told to stop with

    @property
    def length(self) -> int:
        return len(self.sentence.ids)


class Pool:
    """The sentences one model decodes now (see the module's docstring). `join` some, then `step`
    until it is empty; each step returns the sentences that ended, with their results."""

    def __init__(self, model):
        self.model = model
        self.transformer = isinstance(model, Transformer)
        self.device = model.out_bias.device
        self.rows: list[_Row] = []
        self.memory = None  # the rows' memories, sources padded to the longest, in row order
        self.cache = None  # Transformer: per layer keys, values (B, h, T, dh) left-padded; else the state
        # the rows that ended at the last step, still in `rows`: they leave with the next step's stopped
        # rows or before the next join, so that the rows' tensors are selected once, not twice a step
        self.finished: list[_Row] = []

    def __len__(self) -> int:
        return len(self.rows) - len(self.finished)

    def join(self, sentences: list[Sentence]) -> None:
        """Encode the sentences; they take part from the next step on."""
        if not sentences:
            return
        self._leave([])
        parts, internals = self._encoded(sentences)
        rows = [_Row(sentence, mine if sentence.keep else {}) for sentence, mine in zip(sentences, internals,
                                                                                          strict=True)]
        lengths = [row.length for row in [*self.rows, *rows]]
        width = max(lengths)
        self.memory = _joined(([self.memory] if self.rows else []) + parts, width,
                              _mask(lengths, width, self.device))
        self.cache = self._joined_cache(parts, len(rows))
        self.rows.extend(rows)

    def _encoded(self, sentences: list[Sentence]) -> tuple[list, list[dict]]:
        """The sentences' memories, as batches in row order, and each one's encoder internals. A
        Transformer encodes the sentences joining at one step together, padded to the longest under a
        mask: its encoder's products over many rows take less time per sentence than one pass each
        (bench/README.md, "Where a batched step's time goes"). A recurrent encoder reads each alone,
        going on from the prefix it read lately (recurrent.py)."""
        if not self.transformer or len(sentences) == 1:
            encoded = [self.model.encode_with_internals(torch.tensor([s.ids], device=self.device))
                       for s in sentences]
            return [memory for memory, _ in encoded], [internals for _, internals in encoded]
        width = max(len(s.ids) for s in sentences)
        src = torch.tensor([s.ids + [PAD_ID] * (width - len(s.ids)) for s in sentences], device=self.device)
        memory, internals = self.model.encode_with_internals(src)  # (B, width, d), maps (B, L, h, S, S)
        maps, states = internals["attentions"]["encoder"], internals["encoder_hidden"]
        # each sentence's own: its rows and keys, the padding cut off
        return [memory], [{"attentions": {"encoder": maps[b:b + 1, :, :, :n, :n]},
                           "encoder_hidden": states[b:b + 1, :n]}
                          for b, n in enumerate(len(s.ids) for s in sentences)]

    def _joined_cache(self, parts: list, new: int):
        if not self.transformer:  # the state each row goes on from: the new rows' encoder's final
            states = ([self.cache] if self.rows else []) + [m.state for m in parts]
            if isinstance(states[0], tuple):
                return tuple(torch.cat([s[j] for s in states]) for j in range(len(states[0])))
            return torch.cat(states)
        if self.cache is None:  # nobody has read a piece yet
            return None
        # the new rows have read nothing: all padding, which no query of theirs sees
        return [tuple(torch.cat([t, t.new_zeros(new, *t.shape[1:])]) for t in layer) for layer in self.cache]

    def step(self) -> list[_Row]:
        """One decoding step for every sentence not told to stop; the rows that ended (told to stop,
        finished, or at their limit), out of the pool, each with its `result`."""
        finished = {id(row) for row in self.finished}
        ended = [row for row in self.rows if id(row) not in finished and _stopped(row)]
        self._leave(ended)
        if not self.rows:
            return ended
        last = torch.tensor([row.last for row in self.rows], device=self.device)
        logits, weights, self.cache = self._decode(last)
        for row in self.rows:
            row.read += 1
        choices = greedy_choices(logits)  # every row's argmax at once, read back once
        self.finished = [row for b, row in enumerate(self.rows)
                         if _advance(row, logits, weights, b, choices[b])]
        return ended + self.finished

    def _decode(self, last: torch.Tensor):
        """logits (B, 1, V), maps, and the new cache of one step for every row."""
        B = last.size(0)
        if not self.transformer:
            return self.model.decode(self.memory, last.view(B, 1), self.cache)
        seen = [row.read for row in self.rows]
        width = 0 if self.cache is None else self.cache[0][0].size(2)
        if all(s == width for s in seen):  # aligned, as one search: the model's own step (its graph)
            return self.model.decode(self.memory, last.view(B, 1), self.cache)
        positions = torch.tensor(seen, device=self.device)
        logits, weights, cache = decode_rows(self.model, self.memory, last, positions, self.cache)
        return logits.view(B, 1, -1), weights, cache

    def _leave(self, rows: list[_Row]) -> None:
        """Take `rows` and the rows that finished out of the batch, and the padding nobody needs any
        more with them."""
        rows, self.finished = rows + self.finished, []
        if not rows:
            return
        gone = {id(row) for row in rows}
        keep = [b for b, row in enumerate(self.rows) if id(row) not in gone]
        self.rows = [self.rows[b] for b in keep]
        if not self.rows:
            self.memory = self.cache = None
            return
        index = torch.tensor(keep, device=self.device)
        memory, cache = select_batch(self.memory, index), select_batch(self.cache, index)
        lengths = [row.length for row in self.rows]
        width = max(lengths)
        self.memory = _trimmed(memory, width, _mask(lengths, width, self.device))
        if self.transformer and cache is not None:  # left-padded: the last max(read) columns hold every key
            most = max(row.read for row in self.rows)
            cache = [tuple(t[:, :, t.size(2) - most:] for t in layer) for layer in cache]
        self.cache = cache


def greedy_many(model, sources: list[list[int]], max_lens: list[int], stops: list[Stop],
                keep: bool = True) -> list[Decoded | tuple[list[int], bool] | Stopped]:
    """Per sentence of `sources` (unpadded ids, each searched up to its `max_lens` entry, told to
    stop by its `stops` entry), all joined to one Pool at once: with `keep`, what
    `models.decoding.greedy` returns with no top-k (every map kept); without, what `greedy_tokens`
    returns. A sentence whose stop() said so before one of its steps gets a Stopped instead; the
    others go on."""
    pool = Pool(model)
    pool.join([Sentence(ids, max_len, stop, keep, i)
               for i, (ids, max_len, stop) in enumerate(zip(sources, max_lens, stops, strict=True))])
    results: list = [None] * len(sources)
    while pool:
        for row in pool.step():
            results[row.sentence.handle] = row.result
    return results


def _stopped(row: _Row) -> bool:
    if row.sentence.stop is not None and row.sentence.stop():
        row.result = Stopped()
        return True
    return False


def _advance(row: _Row, logits: torch.Tensor, weights: dict, b: int, choice: int) -> bool:
    """Row b's step, as the one-sentence searches take it: True when its sentence has ended."""
    keep, max_len = row.sentence.keep, row.sentence.max_len
    if keep:
        # the whole step's outputs and this row's place in them: cut out only if the sentence ends with
        # an answer (most of a typing reader's sentences are told to stop first, and never need theirs)
        row.steps.append((logits, weights, b, row.read))
        if len(row.tokens) == max_len:  # cut by the limit, with the outputs after the last token kept
            return _end(row, False)
    row.last = choice
    if row.last == EOS_ID:
        return _end(row, True)
    row.tokens.append(row.last)
    return not keep and len(row.tokens) == max_len and _end(row, False)


def _end(row: _Row, finished: bool) -> bool:
    if row.sentence.keep:
        steps = [_own(row, *step) for step in row.steps]
        row.result = collected(row.tokens, finished, steps, row.internals, 0)
    else:
        row.result = (row.tokens, finished)
    return True


def _own(row: _Row, logits: torch.Tensor, weights: dict, b: int, read: int) -> tuple[torch.Tensor, dict]:
    """Row b's logits (1, 1, V) and maps of one step taken by `logits.size(0)` rows, when it had read
    `read` pieces: a source's keys end at its length, a decoder's past keys are its last `read`
    columns, the rest padding."""
    if logits.size(0) == 1:  # alone: no padding to cut off
        return logits.view(1, 1, -1), weights
    maps = {kind: w[b:b + 1, ..., :row.length] if kind == "cross" else w[b:b + 1, ..., w.size(-1) - read:]
            for kind, w in weights.items()}
    return logits[b:b + 1].view(1, 1, -1), maps


def _joined(parts: list, width: int, mask: torch.Tensor | None) -> TransformerMemory | Seq2SeqMemory:
    """Batches of memories (their sources at most `width` long) as one, every source padded to
    `width` (with zeros, or a batch's own padding), and `mask` (B, width) (None: no padding) hiding
    every padded key."""
    first = parts[0]
    if isinstance(first, TransformerMemory):
        kv = [tuple(torch.cat([_pad(m.cross_kv[layer][j], width, 2) for m in parts]) for j in (0, 1))
              for layer in range(len(first.cross_kv))]
        states = torch.cat([_pad(m.states, width, 1) for m in parts])
        return TransformerMemory(states, None if mask is None else mask.unsqueeze(1), first.head_mask, kv,
                                 first.off)
    state = first.state
    joined = (tuple(torch.cat([m.state[j] for m in parts]) for j in range(len(state)))
              if isinstance(state, tuple) else torch.cat([m.state for m in parts]))
    projected = None if first.projected is None else torch.cat([_pad(m.projected, width, 1) for m in parts])
    keys = torch.cat([_pad(m.keys, width, 1) for m in parts])
    return Seq2SeqMemory(keys, mask, joined, projected)


def _trimmed(memory, width: int, mask: torch.Tensor | None):
    """`memory` with its sources cut to `width` (the padding past the longest left) and `mask`."""
    if isinstance(memory, TransformerMemory):
        kv = [tuple(t[:, :, :width] for t in layer) for layer in memory.cross_kv]
        return TransformerMemory(memory.states[:, :width], None if mask is None else mask.unsqueeze(1),
                                 memory.head_mask, kv, memory.off)
    projected = None if memory.projected is None else memory.projected[:, :width]
    return Seq2SeqMemory(memory.keys[:, :width], mask, memory.state, projected)


def _pad(t: torch.Tensor, width: int, dim: int) -> torch.Tensor:
    missing = width - t.size(dim)
    if not missing:
        return t
    return F.pad(t, [0, 0] * (t.dim() - 1 - dim) + [0, missing])


def _mask(lengths: list[int], width: int, device) -> torch.Tensor | None:
    """(B, width), True on real source pieces; None when no sentence is padded."""
    return mask_if_needed(padding_mask(torch.tensor(lengths, device=device), width))
