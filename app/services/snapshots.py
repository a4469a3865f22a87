"""POST /api/snapshots as a function: the typed sentence's translation and attention maps at one
point of a model's training (the scrubber of the attention and heads chapters), from the untrained
initialization
through the stored snapshots to the shipped weights."""

from __future__ import annotations

import threading
from dataclasses import replace

from app.runtime.registry import ModelRegistry
from app.schemas.snapshots import Snapshot
from app.services.inference import GREEDY, decode, stop_when
from app.services.maps import label_maps
from app.services.translation import translation_fields
from models.outputs import ATTENTION_KINDS


def snapshot_maps(registry: ModelRegistry, name: str, text: str, step: int,
                  kinds: tuple[str, ...] = ATTENTION_KINDS, cancel: threading.Event | None = None) -> Snapshot:
    """What POST /api/attention answers for model `name`, computed with its weights at training
    step `step`, plus that point of its training (`snapshot`). Model, step and text are checked
    before anything runs (UnknownModelError, UnknownSnapshotError, InvalidTextError)."""
    source = registry.source(text)
    entry = registry.get(name)
    point = registry.states.snapshot_point(name, step)

    def compute() -> Snapshot:
        at_step = replace(entry, model=registry.states.at_step(name, step))
        decoded = decode(at_step, source, GREEDY, registry.limits.max_target_tokens, stop_when(cancel))
        fields = translation_fields(name, registry.tokenizer, source, decoded.tokens, decoded.finished)
        maps = label_maps(registry.tokenizer, decoded.output, source, decoded.tokens, kinds)
        return Snapshot(**fields, maps=maps, snapshot=point)

    return registry.jobs.result(("snapshot", name, step, source.text, kinds), compute, cancel)
