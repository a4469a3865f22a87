"""One place that runs a model on a sentence: options checked against the model, then greedy or
beam search under inference_mode. Translate and attention both build on `decode`."""

from __future__ import annotations

import threading
from dataclasses import dataclass

import torch

from app.services.registry import LoadedModel
from app.services.text import Source
from models.config import TransformerConfig
from models.decoding import Decoded, Stop, beam_search, greedy, greedy_tokens, max_target_len


class InvalidOptionError(ValueError):
    """An option the chosen model does not have (e.g. a head switch on a recurrent model)."""

    def __init__(self, field: str, message: str):
        super().__init__(message)
        self.field = field


@dataclass(frozen=True)
class DecodeOptions:
    """Everything besides the text that changes a result; hashable, so it keys the cache."""

    beam_size: int = 1  # 1: greedy
    top_k: int = 0  # next-token alternatives reported per step; 0: none
    positional: bool | None = None  # Transformer only: switch the positional encoding (chapter 8)
    heads_off: tuple[tuple[str, int, int], ...] = ()  # Transformer only: (kind, layer, head) (chapter 9)


GREEDY = DecodeOptions()


def stop_when(cancel: threading.Event | None) -> Stop:
    """The decoder's stop test for a cancel flag (None: never stop)."""
    return None if cancel is None else cancel.is_set


def model_options(entry: LoadedModel, options: DecodeOptions) -> dict:
    """The keyword arguments `models.decoding` passes to the model, checked against its config."""
    config = entry.model.config
    switches = options.positional is not None or options.heads_off
    if not isinstance(config, TransformerConfig):
        if switches:
            raise InvalidOptionError("positional" if options.positional is not None else "heads_off",
                                     f"only the transformer has positional/head switches, not {entry.name!r}")
        return {}
    kwargs: dict = {}
    if options.positional is not None:
        kwargs["positional"] = options.positional
    if options.heads_off:
        kwargs["head_mask"] = head_mask(config, options.heads_off, next(entry.model.parameters()).device)
    return kwargs


def head_mask(config: TransformerConfig, heads_off, device) -> dict[str, torch.Tensor]:
    """kind -> (layers, heads) tensor of 1s with a 0 for every switched-off head."""
    layers = {"encoder": config.n_encoder_layers, "decoder": config.n_decoder_layers,
              "cross": config.n_decoder_layers}
    mask = {}
    for kind, layer, head in heads_off:
        if kind not in layers or not 0 <= layer < layers[kind] or not 0 <= head < config.n_heads:
            raise InvalidOptionError(
                "heads_off", f"no head ({kind}, layer {layer}, head {head}); kinds {sorted(layers)}, "
                f"layers 0-{layers.get(kind, 1) - 1}, heads 0-{config.n_heads - 1}")
        mask.setdefault(kind, torch.ones(layers[kind], config.n_heads, device=device))[layer, head] = 0
    return mask


def decode_tokens(entry: LoadedModel, source: Source, options: DecodeOptions, max_tokens: int = 128,
                  stop: Stop = None):
    """Only the greedy translation's ids and whether it ended: skips keeping the maps, encoder
    states and next-token scores that `decode` collects for attention and top-k."""
    kwargs = model_options(entry, options)
    with torch.inference_mode():
        return greedy_tokens(entry.model, source.ids, _max_len(entry, source, max_tokens), stop, **kwargs)


def _max_len(entry: LoadedModel, source: Source, max_tokens: int) -> int:
    return min(max_target_len(entry.model, len(source.ids)), max_tokens)


def decode(entry: LoadedModel, source: Source, options: DecodeOptions, max_tokens: int = 128,
           stop: Stop = None) -> Decoded:
    """Greedy (beam_size 1) or beam search, with every internal collected, at most `max_tokens`
    pieces long. No gradients, no state kept anywhere: the same call gives the same answer from
    any thread. `stop()` true before a decoder step: models.decoding.Stopped."""
    kwargs = model_options(entry, options)
    k = max(options.top_k, 1)
    max_len = _max_len(entry, source, max_tokens)
    with torch.inference_mode():
        if options.beam_size == 1:
            return greedy(entry.model, source.ids, max_len=max_len, top_k=k, stop=stop, **kwargs)
        return beam_search(entry.model, source.ids, options.beam_size, max_len=max_len, top_k=k, stop=stop,
                           **kwargs)
