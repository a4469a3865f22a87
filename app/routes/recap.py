from fastapi import APIRouter

from app.dependencies import Registry
from app.schemas import ErrorBody, Recap, TextRequest
from app.services.recap import recap as gather

router = APIRouter(prefix="/api", tags=["recap"])


@router.post("/recap", response_model=Recap, responses={404: {"model": ErrorBody}})
async def recap(body: TextRequest, registry: Registry) -> Recap:
    """Chapter 11: one number per chapter measured on the text, gathered from the chapters' own
    requests (cheap forms where a chapter's default is heavy); rows whose models are not loaded are left out."""
    return await gather(registry, body.text)
