"""Running a loaded model on one sentence: options checked against the model, then greedy or
beam search under inference_mode. Translate and attention both build on `decode`."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass

import torch

from app.runtime.errors import InvalidOptionError, UnknownModelError
from app.runtime.registry import LoadedModel, ModelRegistry
from app.runtime.text import Source
from models.decoding import Decoded, Stop, max_target_len
from models.serving.batch import Pool, Sentence
from models.serving.threads import beam_search, greedy, greedy_tokens, set_intra_op

# rows of a pool's step below which a second intra-op thread costs more than it saves
POOL_ROWS_PER_THREAD = 8


@dataclass(frozen=True)
class DecodeOptions:
    """Everything besides the text that changes a result; hashable, so it keys the cache."""

    beam_size: int = 1  # 1: greedy
    top_k: int = 0  # next-token alternatives reported per step; 0: none
    positional: bool | None = None  # Transformer only: switch the encoder's positional encoding (order)
    heads_off: tuple[tuple[str, int, int], ...] = ()  # Transformer only: (kind, layer, head) (heads)
    sublayers_off: tuple[str, ...] = ()  # Transformer only: SUBLAYER_SWITCHES off (the room chapter)


GREEDY = DecodeOptions()


def stop_when(cancel: threading.Event | None) -> Stop:
    """The decoder's stop test for a cancel flag (None: never stop)."""
    return None if cancel is None else cancel.is_set


def model_options(entry: LoadedModel, options: DecodeOptions) -> dict:
    """The keyword arguments `models.decoding` passes to the model, checked against what it has."""
    switched = [field for field, value in (("positional", options.positional is not None),
                                           ("heads_off", options.heads_off),
                                           ("sublayers_off", options.sublayers_off)) if value]
    if not entry.capabilities.switches:
        if switched:
            raise InvalidOptionError(switched[0],
                                     f"{entry.name!r} has no positional, head or sub-layer switches")
        return {}
    kwargs: dict = {}
    if options.positional is not None:
        kwargs["positional"] = options.positional
    if options.heads_off:
        try:
            kwargs["head_mask"] = entry.model.head_mask(options.heads_off)
        except ValueError as error:
            raise InvalidOptionError("heads_off", str(error)) from error
    if options.sublayers_off:
        kwargs["off"] = options.sublayers_off
    return kwargs


def decode_tokens(entry: LoadedModel, source: Source, options: DecodeOptions, max_tokens: int,
                  stop: Stop = None):
    """Only the greedy translation's ids and whether it ended: skips keeping the maps, encoder
    states and next-token scores that `decode` collects for attention and top-k."""
    kwargs = model_options(entry, options)
    with torch.inference_mode():
        return greedy_tokens(entry.model, source.ids, _max_len(entry, source, max_tokens), stop, **kwargs)


def sentence_pool(entry: LoadedModel) -> Pool:
    """An empty pool of greedy searches on `entry`'s model, stepped together (models/serving/batch.py)."""
    return Pool(entry.model)


def join_pool(entry: LoadedModel, pool: Pool, sentences: list[tuple[Source, int, Stop, bool, object]]) -> None:
    """(source, max tokens, stop, keep every map, handle) per sentence into `pool`: each then
    searched as `decode` with GREEDY (`keep`) or `decode_tokens` (not) would search it alone."""
    set_intra_op(1)  # each encoder alone, as one sentence's search runs it (a turn sets its own at its start)
    with torch.inference_mode():
        pool.join([Sentence(source.ids, _max_len(entry, source, max_tokens), stop, keep, handle)
                   for source, max_tokens, stop, keep, handle in sentences])


def step_pool(pool: Pool) -> list[tuple[object, object]]:
    """One decoding step of every sentence of `pool`: (handle, result) per sentence that ended,
    its result a Decoded, (ids, finished), or the Stopped its stop() asked for. Up to a few rows a
    step runs on one intra-op thread, as one sentence's search does (models/serving/threads.py);
    a wider step keeps the threads the model thread gave it."""
    if len(pool) < POOL_ROWS_PER_THREAD:
        set_intra_op(1)  # left so for the pool's next steps: a turn sets its own count at its start
    with torch.inference_mode():
        return [(row.sentence.handle, row.result) for row in pool.step()]


def _max_len(entry: LoadedModel, source: Source, max_tokens: int) -> int:
    return min(max_target_len(entry.model, len(source.ids)), max_tokens)


def decode(entry: LoadedModel, source: Source, options: DecodeOptions, max_tokens: int,
           stop: Stop = None) -> Decoded:
    """Greedy (beam_size 1) or beam search, with every internal collected, at most `max_tokens`
    pieces long. No gradients, no state kept anywhere: the same call gives the same answer from
    any thread. `stop()` true before a decoder step: models.decoding.Stopped."""
    kwargs = model_options(entry, options)
    k = options.top_k  # 0 (maps only): no next-token distributions
    max_len = _max_len(entry, source, max_tokens)
    with torch.inference_mode():
        if options.beam_size == 1:
            return greedy(entry.model, source.ids, max_len=max_len, top_k=k, stop=stop, **kwargs)
        return beam_search(entry.model, source.ids, options.beam_size, max_len=max_len, top_k=k, stop=stop,
                           **kwargs)


def pick_model(registry: ModelRegistry, name: str | None, fits: Callable[[LoadedModel], bool],
               what: str, none_loaded: str | None = None) -> LoadedModel:
    """Model `name`, which must fit (else an InvalidOptionError naming `model`); None: the first
    loaded model that fits (none: UnknownModelError). `what` says what fits, for the messages;
    `none_loaded` replaces "no {what} is loaded" in the second."""
    if name is not None:
        entry = registry.get(name)
        if not fits(entry):
            raise InvalidOptionError("model", f"{name!r} is not {what}")
        return entry
    for entry in registry.models.values():
        if fits(entry):
            return entry
    loaded = ", ".join(registry.names) or "none"
    raise UnknownModelError(f"{none_loaded or f'no {what} is loaded'}; loaded: {loaded}")


def chosen_model(registry: ModelRegistry, name: str | None) -> LoadedModel:
    """Model `name` (UnknownModelError when not loaded), or when none is named the catalogue's
    default: the first loaded model whose heads and positions can be switched (where the story
    ends), else the last loaded one. Chosen by what the models have inside, never by name."""
    if name is not None:
        return registry.get(name)
    entries = list(registry.models.values())
    if not entries:
        raise UnknownModelError("no model is loaded")
    return next((e for e in entries if e.capabilities.switches), entries[-1])


def with_switches(entry: LoadedModel) -> bool:
    """A model whose encoder's positional encoding and heads can be switched (the Transformer's chapters)."""
    return entry.capabilities.switches


SWITCHED = "a model with positional and head switches (a Transformer)"  # with_switches, in messages


def attending(entry: LoadedModel) -> bool:
    """A recurrent model whose decoder attends over the source (the attention chapter's scores, the heads
    chapter's reference)."""
    return entry.capabilities.recurrent and entry.capabilities.cross_attention


ATTENDING = "a recurrent model with attention over the source"  # attending, in messages
