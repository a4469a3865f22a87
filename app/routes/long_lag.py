from fastapi import APIRouter

from app.dependencies import ClientGone, ModelTime, Registry
from app.routes import Answered
from app.schemas.base import ErrorBody
from app.schemas.long_lag import LagGradients, LagGradientsRequest, LongLagResults
from app.services import long_lag

router = APIRouter(prefix="/api", tags=["gradients"], route_class=Answered)


@router.get("/long-lag", response_model=LongLagResults, responses={404: {"model": ErrorBody}})
def results(registry: Registry) -> LongLagResults:
    """The gradients chapter's learning experiment: accuracy against lag for tiny RNN and LSTM encoders."""
    return long_lag.results(registry)


@router.post("/long-lag/gradients", response_model=LagGradients,
             responses={404: {"model": ErrorBody}, 429: {"model": ErrorBody}})
def gradients(body: LagGradientsRequest, registry: Registry, gone: ClientGone,
              share: ModelTime) -> LagGradients:
    """The gradient curves of the tiny models trained at one lag (and before training); its model
    time is charged to the same share as /api/gradients'."""
    try:
        return long_lag.lag_gradients(registry, body.lag, body.filler, body.initialized, gone, share.meter)
    finally:
        share.charge()
