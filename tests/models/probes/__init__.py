"""Helpers shared by the probes' tests."""

import torch

from models.architectures import build
from models.config import TransformerConfig


def tiny_transformer():
    """A seeded, untrained 2-layer Transformer (d_model 32, 4 heads of d_k 8), eval mode."""
    torch.manual_seed(0)
    config = TransformerConfig(vocab_size=60, d_model=32, n_heads=4, n_encoder_layers=2, n_decoder_layers=2,
                               d_ff=64)
    return build(config).eval()
