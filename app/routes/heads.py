from fastapi import APIRouter

from app.dependencies import ClientGone, Registry
from app.routes import Answered
from app.schemas.base import ErrorBody
from app.schemas.heads import Heads, HeadsRequest
from app.services import heads as service

router = APIRouter(prefix="/api", tags=["chapters"], route_class=Answered)


@router.post("/heads", response_model=Heads, response_model_exclude_none=True,
             responses={404: {"model": ErrorBody}})
def heads(body: HeadsRequest, registry: Registry, gone: ClientGone) -> Heads:
    """The heads chapter: what each head adds to the residual stream, the cross heads ranked by agreement
    with a recurrent model's alignment, encoder rollout, and the effect of switching heads off."""
    return service.answer(registry, body, gone)
