from fastapi import APIRouter

from app.dependencies import ClientGone, Registry
from app.routes import Answered
from app.schemas.base import ErrorBody, TextRequest
from app.schemas.recap import Recap
from app.services import recap as service

router = APIRouter(prefix="/api", tags=["recap"], route_class=Answered)


@router.post("/recap", response_model=Recap, responses={404: {"model": ErrorBody}})
def recap(body: TextRequest, registry: Registry, gone: ClientGone) -> Recap:
    """The recap chapter: one number per chapter measured on the text, from the chapters' own service calls
    (cheap forms where a chapter's default is heavy); rows whose models are not loaded are left out."""
    return service.answer(registry, body, gone)
