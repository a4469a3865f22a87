"""One dataclass per architecture. Saved verbatim as `checkpoints/NAME/config.json`."""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import Any

ARCHITECTURES = ("rnn", "lstm")
ATTENTIONS = (None, "additive", "dot")
MAX_BEAM_SIZE = 8  # hypotheses a beam search keeps at most (models/decoding.py; the server tells clients)


@dataclass
class Seq2SeqConfig:
    """Recurrent encoder-decoder (Sutskever et al. 2014; Bahdanau et al. / Luong et al. 2015)."""

    vocab_size: int = 8000
    cell: str = "lstm"  # "rnn" (Elman) or "lstm"
    attention: str | None = None  # None (bottleneck), "additive" or "dot"
    d_embed: int = 256  # token embedding width, shared by source and target
    d_hidden: int = 512  # recurrent state width
    d_attn: int = 256  # width of the additive scorer's hidden layer
    dropout: float = 0.1  # on embeddings and on the decoder output
    max_len: int = 128  # longest target decoded at inference

    def __post_init__(self) -> None:
        if self.cell not in ARCHITECTURES:
            raise ValueError(f"cell must be one of {ARCHITECTURES}, got {self.cell!r}")
        if self.attention not in ATTENTIONS:
            raise ValueError(f"attention must be one of {ATTENTIONS}, got {self.attention!r}")


@dataclass
class TransformerConfig:
    """Encoder-decoder Transformer (Vaswani et al. 2017), with pre-norm layers (see transformer.py)."""

    vocab_size: int = 8000
    d_model: int = 256  # width of every residual stream
    n_heads: int = 4  # heads per attention; d_model must divide evenly
    n_encoder_layers: int = 3
    n_decoder_layers: int = 3
    d_ff: int = 1024  # hidden width of the position-wise feed-forward
    dropout: float = 0.1
    max_len: int = 512  # longest sequence the positional table covers
    positional: bool = True  # sinusoidal encoding, both sides; encode(positional=) switches the encoder's

    def __post_init__(self) -> None:
        if self.d_model % self.n_heads:
            raise ValueError("d_model must be a multiple of n_heads")


ModelConfig = Seq2SeqConfig | TransformerConfig
CONFIG_CLASSES = {"seq2seq": Seq2SeqConfig, "transformer": TransformerConfig}


def config_to_dict(config: ModelConfig) -> dict[str, Any]:
    kind = "transformer" if isinstance(config, TransformerConfig) else "seq2seq"
    return {"kind": kind, **asdict(config)}


def config_from_dict(data: dict[str, Any]) -> ModelConfig:
    cls = CONFIG_CLASSES[data["kind"]]
    names = {f.name for f in fields(cls)}
    return cls(**{k: v for k, v in data.items() if k in names})
