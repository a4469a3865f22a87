"""A Transformer's decoding step and its encoder, each recorded once as a TorchScript graph: the
same calls, run from C++.

A decoding step (step.step per layer, then the tied output projection) is many small PyTorch calls
on rows of 256 to 1,024 numbers. Made from Python, each call also pays the interpreter and
PyTorch's parsing of its arguments; made from the graph, it does not (bench/floor.py times the
decode both ways). `StepGraph` runs the step once per served model under torch.jit.trace, which
records the ATen calls it makes, then makes those calls itself: the same calls on the same tensors
in the same order, so the same numbers, bit for bit (tests/models/serving/test_graph.py).

A recording is one path through the step: one new position per sentence, no padding mask, no
switched-off heads, nothing differentiated. `ServedTransformer.decode` takes the graph only on that
path and runs the Python step otherwise. The graph reads the served model's own weight tensors
(nothing is copied), recorded after their layout and fp16 copies are final, so the Python step
stays the reference the tests compare it with, and one setting away (Settings.step).

The encoder is recorded the same way (`EncoderGraph`), with padding and without, run on the path
`ServedTransformer.encode_with_internals` checks (no switched-off encoder head). So is
the step of sentences at different positions stepped together (`RowsGraph`, step.decode_rows), with
its two masks as inputs.
"""

from __future__ import annotations

import math
import warnings
from contextlib import contextmanager

import torch
from torch import nn

from models.serving.step import ServedTransformer, step
from models.tokenizer import PAD_ID
from models.transformer import Transformer


def available() -> bool:
    """This torch still records graphs (torch.jit.trace is deprecated in favour of torch.export)."""
    return hasattr(torch.jit, "trace")


class StepGraph:
    """The decoding step of one ServedTransformer, recorded for the first position (no cached
    keys) and for later ones."""

    def __init__(self, model: ServedTransformer):
        with frozen(model), torch.no_grad():
            self.first, self.next = _record(model, past=False), _record(model, past=True)
        # position i as the (1,) tensor the graph reads, made once rather than at every step
        self.positions = torch.arange(model.pe.size(0), device=model.pe.device).view(-1, 1).unbind(0)

    def __call__(self, ids: torch.Tensor, position: int, cache, cross_kv):
        """One step, as `ServedTransformer.decode` makes it: ids (B,) the pieces read at `position`
        (below the positional table's length); cache: per layer its past keys and values, each
        (B, h, position, dh), or None at the first step; cross_kv: per layer the source's keys and
        values, each (B, h, S, dh). Returns logits (B, V), {"decoder": (B, L, h, 1, position + 1),
        "cross": (B, L, h, 1, S)} and the new cache."""
        if cache is None:
            run, per_layer = self.first, cross_kv
        else:  # per layer: past keys, past values, the source's keys, its values
            run, per_layer = self.next, [(*past, *cross) for past, cross in zip(cache, cross_kv, strict=True)]
        logits, self_w, cross_w, *kv = run(ids, self.positions[position],
                                           *[t for tensors in per_layer for t in tensors])
        return logits, {"decoder": self_w, "cross": cross_w}, list(zip(kv[::2], kv[1::2], strict=True))


class RowsGraph:
    """step.decode_rows of one ServedTransformer once some keys are cached, recorded: one new piece
    per sentence, each at its own position, the past keys left-padded and the sources padded, both
    under masks given as inputs; no switched-off head, nothing differentiated."""

    def __init__(self, model: ServedTransformer):
        weights, d = model.steps, model.config.d_model
        positional = model.config.positional

        def rows_step(ids, seen, past_mask, memory_mask, *tensors):
            x = model.embed(ids) * math.sqrt(d)  # (B, d)
            if positional:
                x = x + model.pe.index_select(0, seen)
            layers = [(tensors[i:i + 2], tensors[i + 2:i + 4]) for i in range(0, len(tensors), 4)]
            return _through_layers(model, x, layers, memory_mask, past_mask)

        like = weights[0].sqrt_d
        keys = like.new_zeros(1, weights[0].n_heads, 1, weights[0].d_head)
        device = like.device
        piece = torch.full((1,), PAD_ID + 1, device=device)
        seen = torch.zeros(1, dtype=torch.long, device=device)
        past_mask = torch.tensor([[[[False, True]]]], device=device)  # one padded past key, the new one
        memory_mask = torch.ones(1, 1, 1, dtype=torch.bool, device=device)
        example = (piece, seen, past_mask, memory_mask, *[keys] * (len(weights) * 4))
        with frozen(model), torch.no_grad(), warnings.catch_warnings():
            warnings.filterwarnings("ignore", category=DeprecationWarning)  # torch.jit: see `available`
            self.run = torch.jit.trace(rows_step, example, check_trace=False)

    def __call__(self, ids, seen, past_mask, memory_mask, cache, cross_kv):
        """ids, seen (B,); past_mask (B, 1, 1, T + 1); memory_mask (B, 1, S); cache and cross_kv per
        layer, (B, h, T, dh) and (B, h, S, dh) -> logits (B, V), the maps, the new cache."""
        tensors = [t for past, cross in zip(cache, cross_kv, strict=True) for t in (*past, *cross)]
        logits, self_w, cross_w, *kv = self.run(ids, seen, past_mask, memory_mask, *tensors)
        return logits, {"decoder": self_w, "cross": cross_w}, list(zip(kv[::2], kv[1::2], strict=True))


class EncoderGraph:
    """The encoder of one ServedTransformer, recorded: the embedding, every layer and the final norm,
    then each decoder layer's cross-attention keys and values of the source, as
    `Transformer.encode_with_internals` computes them in eval mode with no switched-off encoder head
    and the configured positional encoding. Recorded twice, on two-piece sentences: unpadded, and a
    batch with padding (its mask, made from the pieces, hides the padding's keys). Sizes are read
    from the input at every call, so any batch up to the positional table's length runs through the
    recording of its kind (`ServedTransformer.encode_with_internals` checks that)."""

    def __init__(self, model: ServedTransformer):
        def encode(src):
            memory, internals = Transformer.encode_with_internals(model, src)  # the derivation's
            kv = [t for pair in memory.cross_kv for t in pair]
            return memory.states, internals["attentions"]["encoder"], *kv

        piece = PAD_ID + 1  # any piece but padding
        device = model.out_bias.device
        unpadded = torch.full((1, 2), piece, device=device)
        padded = torch.tensor([[piece, piece], [piece, PAD_ID]], device=device)
        with frozen(model), torch.no_grad(), warnings.catch_warnings():
            warnings.filterwarnings("ignore", category=DeprecationWarning)  # torch.jit: see `available`
            warnings.filterwarnings("ignore", category=torch.jit.TracerWarning)  # the padding test's branch
            self.run = torch.jit.trace(encode, (unpadded,), check_trace=False)
            self.padded = torch.jit.trace(encode, (padded,), check_trace=False)

    def __call__(self, src: torch.Tensor, padded: bool = False):
        """src (B, S), with padding or without as `padded` says -> states (B, S, d), the encoder's
        maps (B, L, h, S, S) and per decoder layer the source's cross-attention keys and values,
        each (B, h, S, dh)."""
        states, weights, *kv = (self.padded if padded else self.run)(src)
        return states, weights, list(zip(kv[::2], kv[1::2], strict=True))


def _record(model: ServedTransformer, past: bool):
    """torch.jit.trace of the step, from the new pieces' embedding to the logits, reading the
    model's `steps` on a one-sentence example (sizes and the position are read from the inputs at
    every call, so any batch, source and past length runs through the same graph)."""
    weights = model.steps
    per_layer = 4 if past else 2  # [past k, past v,] cross k, cross v

    def decode_step(ids, position, *tensors):
        x = model.step_input(ids, position)  # (B, d)
        mine = [tensors[i:i + per_layer] for i in range(0, len(tensors), per_layer)]
        return _through_layers(model, x, [(t[:2] if past else None, t[-2:]) for t in mine])

    like = weights[0].sqrt_d
    heads, d_head = weights[0].n_heads, weights[0].d_head
    keys = like.new_zeros(1, heads, 1, d_head)  # one earlier position, and one source piece
    piece = torch.full((1,), PAD_ID + 1, device=like.device)  # any piece but padding
    example = (piece, torch.ones(1, dtype=torch.long, device=like.device), *[keys] * (len(weights) * per_layer))
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", category=DeprecationWarning)  # torch.jit: see `available`
        return torch.jit.trace(decode_step, example, check_trace=False)


def _through_layers(model: ServedTransformer, x, layers, memory_mask=None, past_mask=None):
    """x (B, d) through every decoder layer's `step`, `layers` giving per layer its past keys and
    values (or None) and the source's: the logits, both maps and the new cache as flat tensors."""
    self_ws, cross_ws, cache = [], [], []
    for w, (past, cross) in zip(model.steps, layers, strict=True):
        x, self_w, cross_w, kv = step(x, w, past, cross, memory_mask, past_mask=past_mask)
        self_ws.append(self_w)
        cross_ws.append(cross_w)
        cache.extend(kv)
    logits, maps = model._outputs(x, self_ws, cross_ws)
    return logits, maps["decoder"], maps["cross"], *cache


@contextmanager
def frozen(model: nn.Module):
    """`model` as a graph replays it, while recording: Parameters that do not require gradients (a
    graph holds its weights as constants, which may not) and eval mode (a dropout is recorded as the
    identity); the graph only ever runs with gradients off, in eval mode. Both restored after."""
    wanted, training = [p.requires_grad for p in model.parameters()], model.training
    model.requires_grad_(False).eval()
    try:
        yield
    finally:
        for p, grad in zip(model.parameters(), wanted, strict=True):
            p.requires_grad_(grad)
        model.train(training)
