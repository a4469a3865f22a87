from fastapi import APIRouter

from app.dependencies import ClientGone, Registry
from app.routes import Answered
from app.schemas.base import ErrorBody
from app.schemas.predict import Prediction, PredictRequest
from app.services import predict as service

router = APIRouter(prefix="/api", tags=["chapters"], route_class=Answered)


@router.post("/predict", response_model=Prediction, response_model_exclude_none=True,
             responses={404: {"model": ErrorBody}})
def predict(body: PredictRequest, registry: Registry, gone: ClientGone) -> Prediction:
    """The prediction chapter: the decoder's top-k next pieces at every step, greedy against beam search (final
    candidates and the beam's tree), and a forced prefix the model continues from."""
    return service.answer(registry, body, gone)
