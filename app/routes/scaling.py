from fastapi import APIRouter

from app.dependencies import ClientGone, Registry
from app.routes import Answered
from app.schemas import ErrorBody, Scaling, ScalingRequest
from app.services.scaling import scaling as measure

router = APIRouter(prefix="/api", tags=["chapters"], route_class=Answered)


@router.post("/scaling", response_model=Scaling, response_model_exclude_none=True,
             responses={404: {"model": ErrorBody}})
def scaling(body: ScalingRequest, registry: Registry, gone: ClientGone) -> Scaling:
    """Chapter 7: softmax saturation against d_k with and without dividing by sqrt(d_k), on sampled
    vectors, and the spread of the Transformer's own scores per kind, layer and head."""
    d_ks = tuple(body.d_k) if body.d_k else None
    return measure(registry, body.text, body.model, d_ks, body.keys, gone)
