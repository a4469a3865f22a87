from functools import partial

from fastapi import APIRouter, Request
from fastapi.responses import StreamingResponse

from app.dependencies import Registry, share_of
from app.routes import NDJSON, Answered
from app.routes.live import RUN_REFUSED, DeadlinedStream
from app.schemas.teach import TeachInfo, TeachRequest
from app.services.teach import TeachRuns

router = APIRouter(prefix="/api", tags=["teach"], route_class=Answered)
Runs = share_of("teach")


def runs(request: Request) -> TeachRuns:
    return request.app.state.teach


@router.get("/teach", response_model=TeachInfo)
async def describe(request: Request, registry: Registry) -> TeachInfo:
    """"Teach it a pair": the models a reader may teach, the defaults and the limits. Asking it has the
    server start a run's process ahead, so that a run asked soon after starts at once."""
    teach = runs(request)
    teach.warm()
    return teach.describe(registry.names)


@router.post("/teach", response_class=StreamingResponse, responses={
    200: {"description": "One JSON object per line as the run goes (each checked by the server against "
                         "these shapes): {start: {model, source, target, loss, reading, before, examples}} "
                         "(TeachStart), a line per step {step, loss, rehearsal_loss, layers, reading, learned} "
                         "(TeachStep), {end: {after, bleu_change, learned_at}} (TeachEnd), and last the "
                         "server's own line {done: true, process, error?} (TeachDone). When every slot is "
                         "taken the run waits in a line first, and says so: {queued: {place, starts_in}} "
                         "(TrainQueued).",
          "content": {NDJSON: {}}},
    429: RUN_REFUSED})
async def teach(body: TeachRequest, request: Request, registry: Registry, share: Runs) -> StreamingResponse:
    """Fine-tune a private copy of a model on the reader's pair, in a process of its own; the lines
    stream as they come. Input is checked before any work (422 naming the field); one run at a time
    per replica, and each client's share of runs (429). The served models are never touched."""
    teach = runs(request)
    config = teach.settings(body.model_dump(exclude_none=True), registry.names)
    # the client's share is charged as the run starts: refused, or gone from the line first, is free
    lines = teach.start(config, share.client, partial(share.charge_async, 1.0))
    return DeadlinedStream(lines, teach.write_deadline_s, media_type=NDJSON,
                           headers={"X-Accel-Buffering": "no"})
