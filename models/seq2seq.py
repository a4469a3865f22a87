"""Recurrent encoder-decoder translation, with and without attention.

Without attention (Sutskever et al. 2014, Cho et al. 2014) the decoder starts from the encoder's
final state and never sees the source again: the whole sentence must fit in one vector, the
bottleneck of the bottleneck chapter. With attention, every decoder state s_t looks back at all encoder states
h_j (the "global attention" of Luong et al. 2015), scored additively (Bahdanau) or by dot product:

    a_t = softmax_j score(s_t, h_j)        c_t = sum_j a_tj h_j
    o_t = tanh(W_c [c_t ; s_t])            p(y_t) = softmax(E o_t')   (E tied to the embeddings)
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from models.attention import AdditiveAttention, DotAttention, mask_if_needed
from models.config import Seq2SeqConfig
from models.lstm import LSTMEncoder
from models.outputs import ModelOutput, TiedEmbedding
from models.rnn import RNNEncoder
from models.tokenizer import PAD_ID


@dataclass
class Seq2SeqMemory:
    keys: torch.Tensor  # (B, S, H): encoder states the attention looks at
    mask: torch.Tensor | None  # (B, S): True on real source tokens; None: no padding
    state: torch.Tensor | tuple[torch.Tensor, torch.Tensor]  # encoder's final h (or (h, c))
    projected: torch.Tensor | None = None  # (B, S, a): the attention's key-only part, once per sentence


def attention_for(c: Seq2SeqConfig) -> AdditiveAttention | DotAttention | None:
    """The attention `c` asks for (None: the bottleneck model), built explicitly. Whichever it is,
    the random generator moves on as far as building an additive scorer moves it."""
    if c.attention == "additive":
        return AdditiveAttention(c.d_hidden, c.d_hidden, c.d_attn)
    # The shipped models were built when every model drew an additive scorer's initial weights here,
    # used or not; the parameters built after it (W_c, out) were trained from the numbers that came
    # next. Drawing the same amount, in the same order (one uniform number per weight, as nn.Linear
    # draws), keeps every model's seeded initialization, and the checkpoints' record of it, the same.
    for shape in AdditiveAttention.parameter_shapes(c.d_hidden, c.d_hidden, c.d_attn):
        torch.empty(shape).uniform_()
    return DotAttention() if c.attention == "dot" else None


class Seq2Seq(nn.Module):
    def __init__(self, config: Seq2SeqConfig):
        super().__init__()
        self.config = c = config
        Recurrent = LSTMEncoder if c.cell == "lstm" else RNNEncoder
        self.embed = TiedEmbedding(c.vocab_size, c.d_embed, padding_idx=PAD_ID)
        self.encoder = Recurrent(c.d_embed, c.d_hidden)
        self.decoder = Recurrent(c.d_embed, c.d_hidden)  # same unrolled cell, reading targets
        self.attention = attention_for(c)
        if self.attention is not None:
            self.W_c = nn.Linear(2 * c.d_hidden, c.d_hidden)
        self.out = nn.Linear(c.d_hidden, c.d_embed)  # into embedding space; logits via tied E
        self.out_bias = nn.Parameter(torch.zeros(c.vocab_size))
        self.drop = nn.Dropout(c.dropout)
        # Small embeddings: they double as the output matrix, and unit-variance rows would start
        # training with huge logits.
        nn.init.normal_(self.embed.weight, std=c.d_embed**-0.5)

    def encode_with_internals(self, src: torch.Tensor):
        """Like `encode`, also returning the encoder's states (and LSTM gates) as ModelOutput
        fields: {"encoder_hidden": (B, S, H), "encoder_gates": (B, S, 3, H) or None}."""
        mask = src != PAD_ID  # (B, S)
        encoding = self.encoder(self.drop(self.embed(src)), mask)
        projected = None if self.attention is None else self.attention.project(encoding.hidden)
        memory = Seq2SeqMemory(keys=encoding.hidden, mask=mask_if_needed(mask), state=encoding.final,
                               projected=projected)
        return memory, {"encoder_hidden": encoding.hidden, "encoder_gates": getattr(encoding, "gates", None)}

    def encode(self, src: torch.Tensor) -> Seq2SeqMemory:
        return self.encode_with_internals(src)[0]

    def decoder_states(self, memory: Seq2SeqMemory, tgt_in: torch.Tensor, cache=None):
        """The decoder's recurrent states s_t reading `tgt_in` (B, t), continuing from `cache` or
        from the encoder's final state: (B, t, H), the queries of the attention (the attention chapter), and
        the state after the last token (the next cache)."""
        state = memory.state if cache is None else cache
        x = self.drop(self.embed(tgt_in))  # (B, t, e)
        if tgt_in.size(1) == 1:  # one token (every decoding step): the cell once, without the unrolling
            h, final = self.decoder.step(x[:, 0], state)
            return h.unsqueeze(1), final
        run = self.decoder(x, None, state)
        return run.hidden, run.final

    def decode(self, memory: Seq2SeqMemory, tgt_in: torch.Tensor, cache=None):
        """Run the decoder over `tgt_in` (B, t), continuing from `cache` (the recurrent state after
        the previous tokens) or from the encoder's final state. Returns logits (B, t, V),
        {"cross": (B, 1, 1, t, S)} ({} without attention), and the new cache."""
        s, final = self.decoder_states(memory, tgt_in, cache)  # (B, t, H)
        weights = {}
        if self.attention is not None:
            context, weights = self.attention(s, memory.keys, memory.mask, memory.projected)  # (B,t,H), (B,t,S)
            s = torch.tanh(self.W_c(torch.cat([context, s], dim=-1)))
            weights = {"cross": weights[:, None, None]}  # one layer, one head
        logits = self.embed.logits(self.out(self.drop(s)), self.out_bias)  # o E^T + b: tied E
        return logits, weights, final

    def forward(self, src: torch.Tensor, tgt_in: torch.Tensor) -> ModelOutput:
        """Teacher-forced pass: src (B, S), tgt_in (B, T) starting with BOS -> ModelOutput."""
        memory, internals = self.encode_with_internals(src)
        logits, weights, _ = self.decode(memory, tgt_in)
        return ModelOutput(logits=logits, attentions=weights, **internals)
