"""A Transformer's decoding step for one new position per sentence, as the server runs it.

Every greedy and beam search step decodes one new token per sentence. `step` makes the decoder
layer's `forward` (models/transformer.py) for that case, in eval mode: the same formulas in the same
order, so the same numbers (tests/models/serving/test_step.py), in less time (bench/floor.py's
general-pass variant measures how much). A step is many tiny calls, each with a fixed cost, so it
reads each layer's weights from a `StepWeights` gathered once when the model is served instead of
looking each up through the modules, keeps its rows 2-D, and projects the self-attention's query,
key and value in one product where the three have fp16 copies (precision.py).

`ServedTransformer` is the trained Transformer (the same modules and Parameters, the same
state-dict names) whose `decode` takes this step, or its recording (graph.py), when it can.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import torch
import torch.nn.functional as F
from torch import nn

from models.attention import mask_if_needed, masked_softmax
from models.serving.precision import HalfCopy, HalfLinear
from models.tokenizer import PAD_ID
from models.transformer import DecoderLayer, Transformer, TransformerMemory, head_row

# A product as a step reads it: weight, bias, and the fp16 copy it is computed from (None: fp32)
Product = tuple[torch.Tensor, torch.Tensor | None, HalfCopy | None]


def linear(x: torch.Tensor, product: Product) -> torch.Tensor:
    weight, bias, half = product
    return F.linear(x, weight, bias) if half is None else half.linear(x, weight, bias)


def _product(module: nn.Linear) -> Product:
    return module.weight, module.bias, module.half if isinstance(module, HalfLinear) else None


class StepWeights(NamedTuple):
    """A decoder layer's parameters as `step` reads them: norms as (weight, bias), products as
    `Product`s, gathered once per served model (not through the modules at every step)."""

    norm1: tuple[torch.Tensor, torch.Tensor]
    qkv: tuple[Product, ...]  # W_q, W_k, W_v; or one stacked (3d, d) product when all have fp16 copies
    W_o: Product
    norm2: tuple[torch.Tensor, torch.Tensor]
    cross_W_q: Product
    cross_W_o: Product
    norm3: tuple[torch.Tensor, torch.Tensor]
    W_1: Product
    W_2: Product
    n_heads: int
    d_head: int
    eps: float
    # sqrt(d_head), what the attention scores are divided by, as a one-element tensor: a 0-dim one or
    # a Python float is converted to a tensor again at every division in a recorded graph
    sqrt_d: torch.Tensor

    @classmethod
    def of(cls, layer: DecoderLayer) -> StepWeights:
        sa, ca, ff = layer.self_attn, layer.cross_attn, layer.ff

        def pair(m: nn.Module) -> tuple[torch.Tensor, torch.Tensor]:
            return m.weight, m.bias

        w_o = sa.W_o.weight
        return cls(pair(layer.norm1), _qkv(sa.W_q, sa.W_k, sa.W_v), _product(sa.W_o), pair(layer.norm2),
                   _product(ca.W_q), _product(ca.W_o), pair(layer.norm3), _product(ff.W_1), _product(ff.W_2),
                   sa.n_heads, sa.d_head, layer.norm1.eps,
                   torch.full((1,), math.sqrt(sa.d_head), dtype=w_o.dtype, device=w_o.device))


def _qkv(*parts: nn.Linear) -> tuple[Product, ...]:
    """W_q, W_k and W_v as three products, or, when all three have fp16 copies, stacked into one:
    a step's three products become one, the same sums of the same numbers (each output is its own
    dot product), and a product's fixed cost is paid once."""
    if not all(isinstance(p, HalfLinear) for p in parts):
        return tuple(_product(p) for p in parts)
    with torch.no_grad():
        weight = torch.cat([p.weight.detach() for p in parts])  # (3d, d)
        bias = torch.cat([p.bias.detach() for p in parts])
    return ((weight, bias, HalfCopy(weight)),)


def step(x, w: StepWeights, past=None, cross_kv=None, memory_mask=None, self_head_mask=None,
         cross_head_mask=None, past_mask=None):
    """DecoderLayer.forward in eval mode for one new position per sentence.
    x: (B, d); past: this layer's cached keys and values, each (B, h, t0, d_head);
    cross_kv: the source's (B, h, S, d_head), projected once; memory_mask: (B, 1, S) or None;
    past_mask: (B, 1, 1, t0 + 1), True on the keys each sentence has (None: all of them; sentences
    that joined a batch later have fewer, see `decode_rows`).
    Returns x (B, d), the self- and cross-attention weights (B, h, 1, t0 + 1 / S) and the keys
    and values up to now."""
    # sizes from ints, the batch as -1: a recorded step (graph.py) reads no size at each call
    d, heads = w.n_heads * w.d_head, (-1, w.n_heads, 1, w.d_head)
    h = torch.layer_norm(x, (d,), *w.norm1, w.eps)
    if len(w.qkv) == 3:
        q, k, v = (linear(h, W).view(heads) for W in w.qkv)  # (B, h, 1, dh)
    else:  # one product for the three: (B, 3 d) -> three (B, h, 1, dh)
        q, k, v = linear(h, w.qkv[0]).view(-1, 3, *heads[1:]).unbind(1)
    if past is not None:
        k, v = torch.cat([past[0], k], dim=2), torch.cat([past[1], v], dim=2)  # (B, h, t0 + 1, dh)
    a, self_w = _heads(q, k, v, past_mask, self_head_mask, w.sqrt_d)  # every key is in the past
    x = x + linear(a, w.W_o)
    q = linear(torch.layer_norm(x, (d,), *w.norm2, w.eps), w.cross_W_q).view(heads)
    mask = None if memory_mask is None else memory_mask.unsqueeze(1)  # (B, 1, 1, S)
    a, cross_w = _heads(q, *cross_kv, mask, cross_head_mask, w.sqrt_d)
    x = x + linear(a, w.cross_W_o)
    inner = torch.relu(linear(torch.layer_norm(x, (d,), *w.norm3, w.eps), w.W_1))  # (B, d_ff)
    return x + linear(inner, w.W_2), self_w, cross_w, (k, v)


def _heads(q, k, v, mask, head_mask, sqrt_d):
    """Scaled dot-product attention (models.attention) of one query per sentence and head,
    q (B, h, 1, dh), with the switched-off heads' contexts zeroed: the heads' contexts side by side
    (B, h dh), the weights (B, h, 1, T_k)."""
    weights = masked_softmax(q @ k.transpose(-2, -1) / sqrt_d, mask)
    context = weights @ v  # (B, h, 1, dh)
    if head_mask is not None:
        context = context * head_mask.view(1, -1, 1, 1).to(context.dtype)
    return context.flatten(1), weights


def as_recorded(model: nn.Module) -> bool:
    """`model` runs as its graphs were recorded (graph.frozen): in eval mode, nothing differentiated."""
    return not model.training and not torch.is_grad_enabled()


def adopt(served: nn.Module, model: nn.Module) -> None:
    """Give `served`, a new instance of a subclass of `model`'s class, `model`'s plain attributes,
    modules, Parameters and buffers themselves (not copies; the same state-dict names) and its mode: the
    trained model as served, without building its modules again (no memory, no random draws)."""
    nn.Module.__init__(served)  # not the model's own __init__: the trained model's modules, not new ones
    for name, value in vars(model).items():  # its plain attributes: config, an attention of None, ...
        if not name.startswith("_") and name != "training":
            setattr(served, name, value)
    persistent = model.state_dict().keys()
    for name, module in model.named_children():
        served.add_module(name, module)
    for name, param in model.named_parameters(recurse=False):
        served.register_parameter(name, param)
    for name, buffer in model.named_buffers(recurse=False):
        served.register_buffer(name, buffer, persistent=name in persistent)
    served.train(model.training)


class ServedTransformer(Transformer):
    """A trained Transformer, sharing its modules and Parameters, whose `decode` of one new token
    per sentence in eval mode runs `step` per layer, or `graph` (graph.StepGraph) on the path it
    recorded. Built by models.serving.served after the weights' layout and copies are final: a
    served model is not changed afterwards (serve the trained model again instead)."""

    def __init__(self, model: Transformer):
        adopt(self, model)
        self.steps = [StepWeights.of(layer) for layer in self.decoder_layers]
        self.graph = None  # the recorded step (graph.StepGraph), set by models.serving.served
        self.encoder_graph = None  # the recorded encoder (graph.EncoderGraph), set with it
        self.rows_graph = None  # the recorded step of sentences at several positions (graph.RowsGraph)

    def encode_with_internals(self, src, head_mask=None, positional=None, off=()):
        """The derivation's, or its recording on a path it recorded: eval mode, nothing
        differentiated, no switched-off encoder head or sub-layer, the configured positional
        encoding, a length within the positional table; with padding or without."""
        if (self.encoder_graph is None or not as_recorded(self) or off
                or "encoder" in (head_mask or {}) or positional not in (None, self.config.positional)
                or src.size(1) > self.pe.size(0)):
            return super().encode_with_internals(src, head_mask, positional, off)
        mask = mask_if_needed((src != PAD_ID).unsqueeze(1))  # (B, 1, S), None without padding
        states, weights, cross_kv = self.encoder_graph(src, padded=mask is not None)
        memory = TransformerMemory(states, mask, head_mask, cross_kv)
        return memory, {"attentions": {"encoder": weights}, "encoder_hidden": states}

    def step_input(self, ids: torch.Tensor, position: torch.Tensor) -> torch.Tensor:
        """`_embed` of one new piece per sentence, ids (B,), all at `position` (a (1,) tensor): (B, d),
        the same numbers. The position is a tensor, not an int to slice with, so that the recorded
        step (graph.py) reads it at every call instead of keeping the recording's."""
        x = self.embed(ids) * math.sqrt(self.config.d_model)  # (B, d)
        if self.config.positional:
            x = x + self.pe.index_select(0, position)  # (1, d)
        return self.drop(x)

    def on_graph_path(self, memory: TransformerMemory, position: int) -> bool:
        """The step at `position` may run through the recorded graph: one was recorded, nothing is
        differentiated, no padding mask, no switched-off decoder or cross head, and the position is
        within the positional table (past it `positions` computes the rows)."""
        heads = memory.head_mask or {}
        return (self.graph is not None and as_recorded(self)
                and memory.mask is None and memory.cross_kv is not None and "decoder" not in heads
                and "cross" not in heads and position < self.pe.size(0))

    def decode(self, memory: TransformerMemory, tgt_in: torch.Tensor, cache=None):
        # `step` makes the layers' forward with every sub-layer on: a switched-off one takes theirs
        if self.training or tgt_in.size(1) != 1 or memory.cross_kv is None or memory.off:
            return super().decode(memory, tgt_in, cache)
        B = tgt_in.size(0)
        offset = 0 if cache is None else cache[0][0].size(2)
        if self.on_graph_path(memory, offset):
            logits, weights, new_cache = self.graph(tgt_in.view(B), offset, cache, memory.cross_kv)
            return logits.view(B, 1, -1), weights, new_cache
        x = self._embed(tgt_in, offset).view(B, -1)  # (B, d)
        heads = memory.head_mask or {}
        self_ws, cross_ws, new_cache = [], [], []
        for i, w in enumerate(self.steps):
            x, sw, cw, kv = step(x, w, None if cache is None else cache[i], memory.cross_kv[i], memory.mask,
                                 head_row(heads, "decoder", i), head_row(heads, "cross", i))
            self_ws.append(sw)
            cross_ws.append(cw)
            new_cache.append(kv)
        logits, weights = self._outputs(x, self_ws, cross_ws)
        return logits.view(B, 1, -1), weights, new_cache


def decode_rows(model: Transformer, memory: TransformerMemory, ids: torch.Tensor, seen: torch.Tensor, cache):
    """One decoding step for sentences at different positions (continuous batching, batch.Pool): ids
    (B,) the pieces read, seen (B,) how many each has read before (its position), cache per layer
    the past keys and values (B, h, T, dh) left-padded: sentence b's own are the last seen[b] of the
    T columns, the others padding no query sees (weight exactly 0). Returns logits (B, V), the maps
    {"decoder": (B, L, h, 1, T + 1), "cross": (B, L, h, 1, S)} and the cache, T + 1 wide."""
    if memory.off:  # `step` makes the layers with every sub-layer on
        raise ValueError("sentences with a sub-layer switched off are not stepped together")
    width = 0 if cache is None else cache[0][0].size(2)
    # (B, 1, 1, T + 1): sentence b's keys are the last seen[b] + 1 columns
    past_mask = torch.arange(width + 1, device=ids.device) >= (width - seen).unsqueeze(1)
    past_mask = past_mask.view(-1, 1, 1, width + 1)
    recorded = getattr(model, "rows_graph", None)
    if recorded is not None and cache is not None and as_recorded(model) and not memory.head_mask:
        mask = memory.mask
        if mask is None:  # every source as long: a mask that hides nothing
            mask = past_mask.new_ones(ids.size(0), 1, memory.cross_kv[0][0].size(2))
        return recorded(ids, seen, past_mask, mask, cache, memory.cross_kv)
    steps = getattr(model, "steps", None) or [StepWeights.of(layer) for layer in model.decoder_layers]
    x = model.embed(ids) * math.sqrt(model.config.d_model)  # (B, d)
    if model.config.positional:
        x = x + model.pe.index_select(0, seen)  # each sentence at its own position
    x = model.drop(x)
    past_mask = None if bool(past_mask.all()) else past_mask
    heads = memory.head_mask or {}
    self_ws, cross_ws, new_cache = [], [], []
    for i, w in enumerate(steps):
        x, sw, cw, kv = step(x, w, None if cache is None else cache[i], memory.cross_kv[i], memory.mask,
                             head_row(heads, "decoder", i), head_row(heads, "cross", i), past_mask)
        self_ws.append(sw)
        cross_ws.append(cw)
        new_cache.append(kv)
    logits, weights = model._outputs(x, self_ws, cross_ws)
    return logits, weights, new_cache
