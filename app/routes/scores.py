from fastapi import APIRouter

from app.dependencies import ClientGone, Registry
from app.routes import Answered
from app.schemas.base import ErrorBody
from app.schemas.scores import Scores, ScoresRequest
from app.services import scores as service

router = APIRouter(prefix="/api", tags=["attention"], route_class=Answered)


@router.post("/scores", response_model=Scores, responses={404: {"model": ErrorBody}})
def scores(body: ScoresRequest, registry: Registry, gone: ClientGone) -> Scores:
    """The attention chapter: for one output piece of the greedy translation, the raw scores over the source,
    the model's softmax weights, the same scores softmaxed at another temperature, and the context
    the weights blend from the encoder states."""
    return service.answer(registry, body, gone)
