from fastapi import APIRouter

from app.dependencies import ClientGone, Registry
from app.routes import Answered
from app.schemas.base import ErrorBody
from app.schemas.translation import Attention, AttentionRequest
from app.services.maps import attention_maps_job
from app.services.translation import decode_options
from models.outputs import ATTENTION_KINDS

router = APIRouter(prefix="/api", tags=["attention"], route_class=Answered)


@router.post("/attention", response_model=Attention, response_model_exclude_none=True,
             responses={404: {"model": ErrorBody}})
async def attention(body: AttentionRequest, registry: Registry, gone: ClientGone) -> Attention:
    """The greedy translation and every attention map computed while producing it."""
    kinds = tuple(k for k in ATTENTION_KINDS if k in body.kinds)  # canonical order, no repeats
    job = attention_maps_job(registry, body.model, body.text, decode_options(body), kinds, gone)
    return await registry.jobs.answer(*job, gone)
