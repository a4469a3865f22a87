"""What the server knows about its models without running them: health and limits, what each
model has inside, metrics, curves. The page builds itself from these: no model name is written
into the front end."""

from __future__ import annotations

from dataclasses import asdict

from app import defaults
from app.runtime.registry import ModelRegistry
from app.schemas.catalog import Clients, Curve, Dropped, Health, ModelInfo, Numerics, PageDefaults, Stepping


def health(registry: ModelRegistry, clients: Clients) -> Health:
    """"ok" while at least one model serves; the models that did not load are listed with why."""
    return Health(
        status="ok" if registry.models else "degraded",
        device=registry.device.type,
        models=registry.names,
        unavailable=dict(registry.unavailable),
        limits=registry.limits,
        # every product is computed in fp32 (checkpoints store fp16, snapshots int8/fp16: widened on
        # load); with fp16-weights, what fp16 holds exactly is read from an fp16 copy
        numerics=Numerics(precision=registry.precision, layout=registry.layout),
        dropped=Dropped(**registry.jobs.thread.dropped.as_dict()),
        stepping=stepping(registry),
        defaults=page_defaults(registry),
        clients=clients,
    )


def stepping(registry: ModelRegistry) -> Stepping:
    steppers = registry.jobs.steppers
    if steppers is None:
        return Stepping(processes=0, ready=0)
    return Stepping(processes=steppers.processes, ready=steppers.ready())


def page_defaults(registry: ModelRegistry) -> PageDefaults:
    return PageDefaults(text=defaults.TEXT, length=defaults.length(registry.limits.max_gradient_length),
                        seed=defaults.SEED, top_k=defaults.TOP_K)


def model_infos(registry: ModelRegistry) -> list[ModelInfo]:
    return [
        ModelInfo(name=entry.name, **asdict(entry.capabilities),
                  cross_attention=entry.capabilities.cross_attention, parameters=entry.parameters,
                  metrics=entry.metrics, curve_points=len(entry.curve), kept=entry.kept,
                  recipe=entry.recipe, sublayers=entry.sublayers, snapshots=entry.timeline())
        for entry in registry.models.values()
    ]


def training_curve(registry: ModelRegistry, name: str) -> Curve:
    return Curve(model=name, points=registry.get(name).curve)
