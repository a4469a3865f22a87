from fastapi import APIRouter

from app.dependencies import ClientGone, Registry
from app.routes import Answered
from app.schemas.base import ErrorBody
from app.schemas.recurrence import Recurrence, RecurrenceRequest
from app.services import recurrence as service

router = APIRouter(prefix="/api", tags=["recurrence"], route_class=Answered)


@router.post("/recurrence", response_model=Recurrence, responses={404: {"model": ErrorBody}})
def recurrence(body: RecurrenceRequest, registry: Registry, gone: ClientGone) -> Recurrence:
    """The recurrence chapter: a recurrent encoder's hidden state after each source piece (a readable subset of
    its units), how far each piece moved it, and its length."""
    return service.answer(registry, body, gone)
