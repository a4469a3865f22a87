"""The Transformer (Vaswani et al. 2017): attention only, no recurrence.

Each layer is a residual stream with two (encoder) or three (decoder) sub-layers added to it:
self-attention, cross-attention (decoder only) and a position-wise feed-forward network. Layer
norm is applied at the input of each sub-layer ("pre-norm", Xiong et al. 2020) rather than after
the sum as in the original paper: the same pieces, but it trains stably without a long warm-up,
which matters on a CPU budget.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import nn

from models.attention import MultiHeadAttention, causal_mask, mask_if_needed
from models.config import TransformerConfig
from models.outputs import ModelOutput, TiedEmbedding
from models.tokenizer import PAD_ID

# Sub-layer switches ("room to think"): what `off` may name, each for every layer, encoder and decoder.
# feed_forward: the feed-forward sub-layer is left out (the stream goes on from the attention alone);
# residual_attention: an attention sub-layer's output replaces the stream instead of being added to it;
# residual_feed_forward: the same for the feed-forward sub-layer's output.
SUBLAYER_SWITCHES = ("feed_forward", "residual_attention", "residual_feed_forward")


def check_off(off) -> frozenset[str]:
    """`off` as the frozenset the layers read; a name not in SUBLAYER_SWITCHES is a ValueError."""
    off = frozenset(off or ())
    unknown = sorted(off - set(SUBLAYER_SWITCHES))
    if unknown:
        raise ValueError(f"no sub-layer switch {unknown}; the switches are {list(SUBLAYER_SWITCHES)}")
    return off


def add(x: torch.Tensor, sub: torch.Tensor, residual: bool) -> torch.Tensor:
    """A sub-layer's output added to the stream x, or, its residual path off, in place of it."""
    return x + sub if residual else sub


def sinusoidal_table(max_len: int, d_model: int) -> torch.Tensor:
    """PE[pos, 2i] = sin(pos / 10000^(2i/d)), PE[pos, 2i+1] = cos(same): (max_len, d_model).
    Each pair of dimensions is a clock at its own frequency, so a fixed offset is a rotation."""
    pos = torch.arange(max_len, dtype=torch.float32).unsqueeze(1)  # (max_len, 1)
    freq = torch.exp(torch.arange(0, d_model, 2, dtype=torch.float32) * (-math.log(10000.0) / d_model))
    table = torch.zeros(max_len, d_model)
    table[:, 0::2] = torch.sin(pos * freq)
    table[:, 1::2] = torch.cos(pos * freq)
    return table


class FeedForward(nn.Module):
    """FFN(x) = W_2 relu(W_1 x + b_1) + b_2, the same small network at every position."""

    def __init__(self, d_model: int, d_ff: int, dropout: float):
        super().__init__()
        self.W_1 = nn.Linear(d_model, d_ff)
        self.W_2 = nn.Linear(d_ff, d_model)
        self.drop = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.W_2(self.drop(torch.relu(self.W_1(x))))


# Told of one attention sub-layer call as a layer's forward makes it: (kind, module, query_in, key_in,
# mask, head_mask, output, weights), the fields of `AttentionCall` but the layer's index, which the
# caller knows and the layer does not. None (the default) records nothing, at no cost to the pass.
Recorder = Callable[[str, MultiHeadAttention, torch.Tensor, torch.Tensor, torch.Tensor | None,
                     torch.Tensor | None, torch.Tensor, torch.Tensor], None]


class EncoderLayer(nn.Module):
    def __init__(self, c: TransformerConfig):
        super().__init__()
        self.self_attn = MultiHeadAttention(c.d_model, c.n_heads, c.dropout)
        self.ff = FeedForward(c.d_model, c.d_ff, c.dropout)
        self.norm1, self.norm2 = nn.LayerNorm(c.d_model), nn.LayerNorm(c.d_model)
        self.drop = nn.Dropout(c.dropout)

    def forward(self, x, mask, head_mask=None, record: Recorder | None = None,
                off: frozenset[str] = frozenset()):
        """`record`, when given, is told of the self-attention call (see `Recorder`); `off`: the
        sub-layer switches (SUBLAYER_SWITCHES) that are off."""
        # x: (B, S, d); mask: (B, 1, S) visible keys
        h = self.norm1(x)
        a, weights = self.self_attn(h, h, h, mask, head_mask)
        if record is not None:
            record("encoder", self.self_attn, h, h, mask, head_mask, a, weights)
        x = add(x, self.drop(a), "residual_attention" not in off)
        if "feed_forward" not in off:
            x = add(x, self.drop(self.ff(self.norm2(x))), "residual_feed_forward" not in off)
        return x, weights  # (B, S, d), (B, h, S, S)


class DecoderLayer(nn.Module):
    def __init__(self, c: TransformerConfig):
        super().__init__()
        self.self_attn = MultiHeadAttention(c.d_model, c.n_heads, c.dropout)
        self.cross_attn = MultiHeadAttention(c.d_model, c.n_heads, c.dropout)
        self.ff = FeedForward(c.d_model, c.d_ff, c.dropout)
        self.norm1, self.norm2, self.norm3 = (nn.LayerNorm(c.d_model) for _ in range(3))
        self.drop = nn.Dropout(c.dropout)

    def forward(self, x, memory, memory_mask, past=None, self_head_mask=None, cross_head_mask=None,
                cross_kv=None, record: Recorder | None = None, off: frozenset[str] = frozenset()):
        """x: (B, t, d) new target positions; past: this layer's self-attention keys and values at
        earlier positions, each (B, h, t0, d_head) (the incremental-decoding cache); cross_kv: the
        source's keys and values, projected once per sentence; record: told of both attention calls
        (see `Recorder`; its key input is the new positions', so record without a `past`); off: the
        sub-layer switches that are off (SUBLAYER_SWITCHES). Returns x, both weights and the keys and
        values up to now."""
        residual = "residual_attention" not in off
        h = self.norm1(x)
        k, v = self.self_attn.keys_values(h, h)
        if past is not None:
            k, v = torch.cat([past[0], k], dim=2), torch.cat([past[1], v], dim=2)  # (B, h, t0 + t, dh)
        # one new position (a decoding step) may see every key: no mask to build
        future = causal_mask(h.size(1), k.size(2), device=x.device) if h.size(1) > 1 else None  # (t, t0+t)
        a, self_w = self.self_attn(h, None, None, future, self_head_mask, kv=(k, v))
        if record is not None:
            record("decoder", self.self_attn, h, h, future, self_head_mask, a, self_w)
        x = add(x, self.drop(a), residual)
        h = self.norm2(x)
        a, cross_w = self.cross_attn(h, memory, memory, memory_mask, cross_head_mask, kv=cross_kv)
        if record is not None:
            record("cross", self.cross_attn, h, memory, memory_mask, cross_head_mask, a, cross_w)
        x = add(x, self.drop(a), residual)
        if "feed_forward" not in off:
            x = add(x, self.drop(self.ff(self.norm3(x))), "residual_feed_forward" not in off)
        return x, self_w, cross_w, (k, v)


@dataclass
class AttentionCall:
    """One attention sub-layer as a teacher-forced pass ran it (the scaling and heads chapters): the module, the
    layer-normed inputs it read, the mask and head switches it was given, and what it returned."""

    kind: str  # "encoder", "decoder" (causal self-attention) or "cross"
    layer: int
    module: MultiHeadAttention  # the layer's own attention: its W_q, W_k, W_v, W_o
    query_in: torch.Tensor  # (B, T_q, d): the normed residual stream the queries are read from
    key_in: torch.Tensor  # (B, T_k, d): what the keys and values are read from
    mask: torch.Tensor | None  # as the module got it: broadcasts to (B, [h,] T_q, T_k)
    head_mask: torch.Tensor | None  # (h,), 0 for a switched-off head
    output: torch.Tensor  # (B, T_q, d): the sub-layer's output, added to the residual stream
    weights: torch.Tensor  # (B, h, T_q, T_k)


@dataclass
class TransformerMemory:
    states: torch.Tensor  # (B, S, d): encoder output
    mask: torch.Tensor | None  # (B, 1, S): True on real source tokens; None: no padding
    head_mask: dict[str, torch.Tensor] | None = None  # kind -> (layers, heads), 0 = switched off
    cross_kv: list[tuple[torch.Tensor, torch.Tensor]] | None = None  # per decoder layer, projected once
    off: frozenset[str] = frozenset()  # sub-layer switches that are off (SUBLAYER_SWITCHES)
    SHARED = ("head_mask", "off")  # no batch axis (see outputs.select_batch)


class Transformer(nn.Module):
    def __init__(self, config: TransformerConfig):
        super().__init__()
        self.config = c = config
        self.embed = TiedEmbedding(c.vocab_size, c.d_model, padding_idx=PAD_ID)  # shared, tied
        self.register_buffer("pe", sinusoidal_table(c.max_len, c.d_model), persistent=False)
        self.encoder_layers = nn.ModuleList(EncoderLayer(c) for _ in range(c.n_encoder_layers))
        self.decoder_layers = nn.ModuleList(DecoderLayer(c) for _ in range(c.n_decoder_layers))
        self.encoder_norm, self.decoder_norm = nn.LayerNorm(c.d_model), nn.LayerNorm(c.d_model)
        self.out_bias = nn.Parameter(torch.zeros(c.vocab_size))
        self.drop = nn.Dropout(c.dropout)
        nn.init.normal_(self.embed.weight, std=c.d_model**-0.5)

    def head_mask(self, heads_off) -> dict[str, torch.Tensor]:
        """(kind, layer, head) triples of switched-off heads -> the `head_mask` that `encode` and
        `forward` take: kind -> (layers, heads), 1 everywhere but a 0 per switched-off head.
        A head that does not exist is a ValueError that names the valid ones (the heads chapter)."""
        c = self.config
        layers = {"encoder": c.n_encoder_layers, "decoder": c.n_decoder_layers, "cross": c.n_decoder_layers}
        device = self.out_bias.device
        mask: dict[str, torch.Tensor] = {}
        for kind, layer, head in heads_off:
            if kind not in layers or not 0 <= layer < layers[kind] or not 0 <= head < c.n_heads:
                raise ValueError(
                    f"no head ({kind}, layer {layer}, head {head}); kinds {sorted(layers)}, "
                    f"layers 0-{layers.get(kind, 1) - 1}, heads 0-{c.n_heads - 1}")
            mask.setdefault(kind, torch.ones(layers[kind], c.n_heads, device=device))[layer, head] = 0
        return mask

    def _embed(self, ids: torch.Tensor, offset: int = 0, positional: bool | None = None):
        x = self.embed(ids) * math.sqrt(self.config.d_model)  # (B, T, d)
        use_pe = self.config.positional if positional is None else positional
        if use_pe:
            x = x + self.positions(offset, ids.size(1))
        return self.drop(x)

    def positions(self, offset: int, T: int) -> torch.Tensor:
        """PE rows offset to offset + T - 1, (T, d). Past the table built at start-up (config.max_len
        rows) the rest is computed for the longer length: sinusoidal_table is a pure function of the
        position, so its first rows are the stored table's, exactly (the parallel chapter times encoders on 1000
        pieces)."""
        end = offset + T
        if end <= self.pe.size(0):
            return self.pe[offset:end]
        return sinusoidal_table(end, self.config.d_model).to(self.pe)[offset:]

    def encode_with_internals(self, src, head_mask=None, positional=None, off=()):
        """Like `encode`, also returning what the encoder computed on the way, as ModelOutput
        fields: {"attentions": {"encoder": (B, L, h, S, S)}, "encoder_hidden": (B, S, d)}."""
        off = check_off(off)
        states, mask, weights = self._encoder(src, head_mask, positional, off=off)
        # contiguous (B, h, S, d_head): every decoding step reads them without a copy
        cross_kv = [tuple(t.contiguous() for t in layer.cross_attn.keys_values(states, states))
                    for layer in self.decoder_layers]
        memory = TransformerMemory(states, mask, head_mask, cross_kv, off)
        return memory, {"attentions": {"encoder": torch.stack(weights, dim=1)}, "encoder_hidden": states}

    def encode(self, src: torch.Tensor, head_mask=None, positional: bool | None = None, off=()):
        """src (B, S) -> TransformerMemory. `positional` switches the encoder's positional encoding
        on or off (None: as configured), for the order chapter; the decoder's is not switched (see `decode`).
        `off` names sub-layer switches (SUBLAYER_SWITCHES) to turn off in every encoder and decoder
        layer; the memory carries them to the decoder."""
        return self.encode_with_internals(src, head_mask, positional, off)[0]

    def _encoder(self, src, head_mask=None, positional=None, record: Recorder | None = None,
                 off: frozenset[str] = frozenset()):
        """The encoder's pass over src (B, S): its normed states (B, S, d), the source mask (B, 1, S)
        (None without padding) and each layer's self-attention weights (B, h, S, S)."""
        mask = mask_if_needed((src != PAD_ID).unsqueeze(1))  # (B, 1, S), None without padding
        x = self._embed(src, positional=positional)
        weights = []
        for i, layer in enumerate(self.encoder_layers):
            x, w = layer(x, mask, head_row(head_mask, "encoder", i), at_layer(record, i), off)
            weights.append(w)
        return self.encoder_norm(x), mask, weights

    def decode(self, memory: TransformerMemory, tgt_in: torch.Tensor, cache=None):
        """tgt_in (B, t) new target tokens after those in `cache` (per layer: past keys, values).
        Returns logits (B, t, V), {"decoder", "cross"} weights (B, L, h, t, t0+t / S), cache.
        The decoder always adds its positional encoding as configured: `encode`'s `positional`
        switches the encoder's only (the order chapter is about the encoder)."""
        x, self_ws, cross_ws, new_cache = self._decoder(memory, tgt_in, cache)
        return *self._outputs(x, self_ws, cross_ws), new_cache

    def _decoder(self, memory: TransformerMemory, tgt_in, cache=None, record: Recorder | None = None):
        """The decoder layers' pass over tgt_in (B, t): their last states (B, t, d) before the final
        norm, each layer's self- and cross-attention weights, and the new cache."""
        offset = 0 if cache is None else cache[0][0].size(2)
        x = self._embed(tgt_in, offset)
        self_ws, cross_ws, new_cache = [], [], []
        for i, layer in enumerate(self.decoder_layers):
            past = None if cache is None else cache[i]
            x, sw, cw, kv = layer(x, memory.states, memory.mask, past, head_row(memory.head_mask, "decoder", i),
                                  head_row(memory.head_mask, "cross", i),
                                  None if memory.cross_kv is None else memory.cross_kv[i], at_layer(record, i),
                                  memory.off)
            self_ws.append(sw)
            cross_ws.append(cw)
            new_cache.append(kv)
        return x, self_ws, cross_ws, new_cache

    def _outputs(self, x, self_ws: list, cross_ws: list):
        """The decoder's last states x (..., d) onto the vocabulary, and its layers' maps stacked:
        logits (..., V), {"decoder": (B, L, h, t, t0 + t), "cross": (B, L, h, t, S)}."""
        logits = self.embed.logits(self.decoder_norm(x), self.out_bias)  # x E^T + b: tied E
        return logits, {"decoder": torch.stack(self_ws, dim=1), "cross": torch.stack(cross_ws, dim=1)}

    def attention_calls(self, src, tgt_in, head_mask=None, positional=None) -> list[AttentionCall]:
        """The teacher-forced pass `forward` makes (in eval mode, as the probes run it), through the
        layers' own forward, returning every attention call with its inputs instead of only its
        weights: encoder layers, then per decoder layer its self- and cross-attention. `positional`
        switches the encoder's positional encoding, as in `encode`."""
        calls: list[AttentionCall] = []

        def record(layer: int, kind: str, *call) -> None:
            calls.append(AttentionCall(kind, layer, *call))

        states, mask, _ = self._encoder(src, head_mask, positional, record)
        # no source keys and values projected ahead: each cross-attention projects its key input itself
        self._decoder(TransformerMemory(states, mask, head_mask), tgt_in, record=record)
        return calls

    def forward(self, src, tgt_in, head_mask=None, positional=None, off=()) -> ModelOutput:
        """Teacher-forced pass: src (B, S), tgt_in (B, T) -> ModelOutput. `positional` switches the
        encoder's positional encoding (see `encode`); the decoder adds its own as configured. `off`:
        sub-layer switches to turn off (see `encode`)."""
        memory, internals = self.encode_with_internals(src, head_mask, positional, off)
        logits, weights, _ = self.decode(memory, tgt_in)
        return ModelOutput(logits=logits, attentions={**internals["attentions"], **weights},
                           encoder_hidden=internals["encoder_hidden"])


def at_layer(record: Callable | None, layer: int) -> Recorder | None:
    """`record` (called with the layer's index first) as the layer `layer` calls it; None stays None."""
    return None if record is None else functools.partial(record, layer)


def head_row(head_mask: dict[str, torch.Tensor] | None, kind: str, layer: int):
    """Layer `layer`'s switches (h,) of the heads of `kind`, or None when none of that kind is off."""
    if head_mask is None or kind not in head_mask:
        return None
    return head_mask[kind][layer]
