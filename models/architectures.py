"""Model names -> architecture. The five models of the story, and how each is built."""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from models.config import ModelConfig, Seq2SeqConfig, TransformerConfig
from models.outputs import ATTENTION_KINDS
from models.seq2seq import Seq2Seq
from models.transformer import Transformer

MODEL_NAMES = ("rnn", "lstm", "lstm-additive", "lstm-dot", "transformer")


def default_config(name: str, vocab_size: int) -> ModelConfig:
    """The shipped size of each model: chosen for quality per CPU-minute, under 16 MB in fp16."""
    if name == "transformer":
        return TransformerConfig(vocab_size=vocab_size)
    cells = {"rnn": ("rnn", None), "lstm": ("lstm", None),
             "lstm-additive": ("lstm", "additive"), "lstm-dot": ("lstm", "dot")}
    if name not in cells:
        raise KeyError(f"unknown model {name!r}; valid: {', '.join(MODEL_NAMES)}")
    cell, attention = cells[name]
    return Seq2SeqConfig(vocab_size=vocab_size, cell=cell, attention=attention)


def build(config: ModelConfig) -> nn.Module:
    return Transformer(config) if isinstance(config, TransformerConfig) else Seq2Seq(config)


def initialized(config: ModelConfig, seed: int) -> nn.Module:
    """The model as training starts it (models.train builds it this way): the same config and seed
    give the same weights, bit for bit, so the untrained state need not be stored. The caller's
    random state is left as it was."""
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        return build(config)


@dataclass(frozen=True)
class Capabilities:
    """What a model has inside: the server and the page choose the experiments that apply to a
    model from these, never from its name, so a new checkpoint folder needs no code edit."""

    architecture: str  # "rnn", "lstm" or "transformer"
    attention: str | None  # None, "additive", "dot" or "scaled-dot"
    layers: int  # attention layers (1 for a recurrent model with attention)
    heads: int  # heads per attention layer (0 without attention)
    recurrent: bool  # reads the source through a recurrence: the gradients chapter's gradient probe applies
    gates: bool  # an LSTM: input, forget and output gates to show
    attention_kinds: tuple[str, ...]  # the maps its forward returns, in ATTENTION_KINDS order
    # the encoder's positional encoding and single heads can be switched off (the order and heads chapters)
    switches: bool
    summary: str  # one line for a reader
    width: int = 0  # the numbers each position carries between layers (d_model; a recurrent model's state)
    feed_forward: int = 0  # the hidden width of the feed-forward layer at every position (d_ff; 0: none)

    @property
    def cross_attention(self) -> bool:
        return "cross" in self.attention_kinds


def describe(config: ModelConfig) -> Capabilities:
    if isinstance(config, TransformerConfig):
        return Capabilities("transformer", "scaled-dot", config.n_encoder_layers, config.n_heads,
                            recurrent=False, gates=False, attention_kinds=ATTENTION_KINDS, switches=True,
                            summary="Transformer: heads, layers, no recurrence", width=config.d_model,
                            feed_forward=config.d_ff)
    summary = {"rnn": "Plain recurrent net (Elman, 1990)", "lstm": "LSTM encoder-decoder (2014)"}[config.cell]
    if config.attention:
        scoring = {"additive": "additive", "dot": "dot-product"}[config.attention]
        summary = f"{config.cell.upper()} + {scoring} attention"
    return Capabilities(config.cell, config.attention, 1, 1 if config.attention else 0, recurrent=True,
                        gates=config.cell == "lstm", attention_kinds=("cross",) if config.attention else (),
                        switches=False, summary=summary, width=config.d_hidden)


def count_parameters(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())
