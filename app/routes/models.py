from fastapi import APIRouter

from app.dependencies import Registry
from app.routes import Answered
from app.schemas.base import ErrorBody
from app.schemas.catalog import Curve, ModelInfo
from app.services import catalog

router = APIRouter(prefix="/api", tags=["models"], route_class=Answered)


@router.get("/models", response_model=list[ModelInfo])
async def models(registry: Registry) -> list[ModelInfo]:
    """Every loaded model: architecture, attention kind, size, and its test-set evaluation."""
    return catalog.model_infos(registry)


@router.get("/models/{name}/curve", response_model=Curve, responses={404: {"model": ErrorBody}})
async def curve(name: str, registry: Registry) -> Curve:
    """One model's training log: loss (and validation BLEU) per evaluation step (the training chapter)."""
    return catalog.training_curve(registry, name)


@router.get("/curves", response_model=list[Curve])
async def curves(registry: Registry) -> list[Curve]:
    """Every loaded model's training log in one call."""
    return [catalog.training_curve(registry, name) for name in registry.names]
