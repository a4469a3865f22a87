from fastapi import APIRouter

from app.dependencies import ClientGone, Registry
from app.routes import Answered
from app.schemas.base import ErrorBody
from app.schemas.snapshots import Snapshot, SnapshotRequest
from app.services.snapshots import snapshot_maps
from models.outputs import ATTENTION_KINDS

router = APIRouter(prefix="/api", tags=["attention"], route_class=Answered)


@router.post("/snapshots", response_model=Snapshot, response_model_exclude_none=True,
             responses={404: {"model": ErrorBody, "description": "unknown model, or no snapshot at that step"}})
def snapshot(body: SnapshotRequest, registry: Registry, gone: ClientGone) -> Snapshot:
    """The translation and attention maps of the typed text at one step of a model's training."""
    kinds = tuple(k for k in ATTENTION_KINDS if k in body.kinds)  # canonical order, no repeats
    return snapshot_maps(registry, body.model, body.text, body.step, kinds, gone)
