from fastapi import APIRouter

from app.dependencies import ClientGone, Registry
from app.routes import Answered
from app.schemas.base import ErrorBody
from app.schemas.next_token import NextToken, NextTokenRequest
from app.services import next_token as service

router = APIRouter(prefix="/api", tags=["chapters"], route_class=Answered)


@router.post("/next-token", response_model=NextToken, response_model_exclude_none=True,
             responses={404: {"model": ErrorBody}})
def next_token(body: NextTokenRequest, registry: Registry, gone: ClientGone) -> NextToken:
    """The prediction chapter: next-token prediction's free labels, one per position, and the model's loss at
    each, in nats, on its own translation of the text or on a reference."""
    return service.answer(registry, body, gone)
