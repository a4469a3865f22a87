from fastapi import APIRouter

from app.dependencies import ClientGone, Registry, Share
from app.routes import Answered
from app.schemas import ErrorBody, Gradients, GradientsRequest
from app.services import gradients as service

router = APIRouter(prefix="/api", tags=["gradients"], route_class=Answered)


@router.post("/gradients", response_model=Gradients, response_model_exclude_none=True,
             responses={404: {"model": ErrorBody}, 429: {"model": ErrorBody}})
def gradients(body: GradientsRequest, registry: Registry, gone: ClientGone, share: Share) -> Gradients:
    """How strongly the final encoder state depends on each input, by distance from the end
    (the recurrent models without attention by default), and the LSTM's gates per token."""
    share.take("gradients")
    return service.answer(registry, body, gone)
