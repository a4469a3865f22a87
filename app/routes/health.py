from fastapi import APIRouter

from app.dependencies import Registry
from app.schemas import Health
from app.services import catalog

router = APIRouter(prefix="/api", tags=["health"])


@router.get("/health", response_model=Health)
def health(registry: Registry) -> dict:
    """Whether the server serves, on which device, and which models did not load (and why)."""
    return catalog.health(registry)
