from fastapi import APIRouter

from app.dependencies import ClientGone, Registry
from app.routes import Answered
from app.schemas.base import ErrorBody
from app.schemas.translation import TranslateRequest, Translation
from app.services.translation import decode_options, translation_job

router = APIRouter(prefix="/api", tags=["translate"], route_class=Answered)


@router.post("/translate", response_model=Translation, response_model_exclude_none=True,
             responses={404: {"model": ErrorBody}})
async def translate(body: TranslateRequest, registry: Registry, gone: ClientGone) -> Translation:
    """Translate French to English: greedy (beam_size 1) or beam search (2-8)."""
    job = translation_job(registry, body.model, body.text, decode_options(body), gone)
    return await registry.jobs.answer(*job, gone)
