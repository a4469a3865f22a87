from fastapi import APIRouter

from app.dependencies import ClientGone, Registry
from app.routes import Answered
from app.schemas.base import ErrorBody
from app.schemas.scaling import Scaling, ScalingRequest
from app.services import scaling as service

router = APIRouter(prefix="/api", tags=["chapters"], route_class=Answered)


@router.post("/scaling", response_model=Scaling, response_model_exclude_none=True,
             responses={404: {"model": ErrorBody}})
def scaling(body: ScalingRequest, registry: Registry, gone: ClientGone) -> Scaling:
    """The scaling chapter: softmax saturation against d_k with and without dividing by sqrt(d_k), on sampled
    vectors, and the spread of the Transformer's own scores per kind, layer and head."""
    return service.answer(registry, body, gone)
