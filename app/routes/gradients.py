from fastapi import APIRouter

from app.dependencies import ClientGone, ModelTime, Registry
from app.routes import Answered
from app.schemas.base import ErrorBody
from app.schemas.gradients import Gradients, GradientsRequest
from app.services import gradients as service

router = APIRouter(prefix="/api", tags=["gradients"], route_class=Answered)


@router.post("/gradients", response_model=Gradients, response_model_exclude_none=True,
             responses={404: {"model": ErrorBody}, 429: {"model": ErrorBody}})
def gradients(body: GradientsRequest, registry: Registry, gone: ClientGone, share: ModelTime) -> Gradients:
    """How strongly the final encoder state depends on each input, by distance from the end
    (the recurrent models without attention by default), and the LSTM's gates per token. The model
    time it takes is charged to the client's share (a kept answer, or work stopped before it began,
    is free)."""
    try:
        return service.answer(registry, body, gone, share.meter)
    finally:
        share.charge()
