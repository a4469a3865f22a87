"""Model names -> architecture. The five models of the story, and how each is built."""

from __future__ import annotations

from torch import nn

from models.config import ModelConfig, Seq2SeqConfig, TransformerConfig
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


def describe(config: ModelConfig) -> dict:
    """Architecture facts the app lists: family, attention kind, layers, heads."""
    if isinstance(config, TransformerConfig):
        return {"architecture": "transformer", "attention": "scaled-dot",
                "layers": config.n_encoder_layers, "heads": config.n_heads}
    return {"architecture": config.cell, "attention": config.attention,
            "layers": 1, "heads": 1 if config.attention else 0}


def count_parameters(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())
