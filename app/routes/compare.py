from collections.abc import AsyncIterator

from fastapi import APIRouter
from fastapi.responses import StreamingResponse

from app.dependencies import ClientGone, Registry, SupersedeKey
from app.routes import NDJSON
from app.schemas.base import NON_FINITE, ErrorBody, NonFiniteAnswerError
from app.schemas.translation import Attention, CompareRequest, ModelFailure
from app.services.comparison import as_ready, queue_comparison

router = APIRouter(prefix="/api", tags=["attention"])
QUEUE_DEPTH = "X-Queue-Depth"


@router.post("/compare", response_class=StreamingResponse, responses={
    200: {"description": "One JSON object per line and per model, each sent as soon as "
                         "it is ready: what POST /api/attention answers for that model (`maps` is [] for "
                         "models without attention), or {\"model\", \"error\"} if that model failed.",
          # a reference to the components' Attention (its own $defs would not resolve inside a path)
          "content": {NDJSON: {"schema": {"$ref": f"#/components/schemas/{Attention.__name__}"}}}},
    404: {"model": ErrorBody}})
async def compare(body: CompareRequest, registry: Registry, gone: ClientGone,
                  supersede_key: SupersedeKey = None) -> StreamingResponse:
    """Every model (or those named) on one text, in one request: the page's way of asking.
    (`X-Supersede-Key` is acted on before this runs, by app/disconnect.py.)"""
    waiting = registry.jobs.thread.load.waiting  # before this request's own work is queued
    # the checks come first (404/422); the stream ends at once when a newer text supersedes it
    answers = as_ready(queue_comparison(registry, body.text, tuple(body.models), gone), gone)
    # X-Accel-Buffering: nginx (and proxies that follow it) pass each line on instead of holding
    # the answer until the last model is done. X-Queue-Depth: how busy the model thread was when
    # this arrived, for monitoring (a typing client asks at every key all the same, docs/API.md).
    return StreamingResponse(_lines(answers), media_type=NDJSON,
                             headers={"X-Accel-Buffering": "no", QUEUE_DEPTH: str(waiting)})


async def _lines(answers: AsyncIterator[Attention | ModelFailure]) -> AsyncIterator[str]:
    async for answer in answers:
        try:
            line = answer.to_json(exclude_none=True)
        except NonFiniteAnswerError:  # that model's line says so, the others stand
            line = ModelFailure(model=answer.model, error=NON_FINITE).to_json()
        yield line + "\n"
