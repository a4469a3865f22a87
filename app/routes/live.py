from fastapi import APIRouter, Request
from fastapi.responses import StreamingResponse

from app.dependencies import Share
from app.routes import NDJSON, Answered
from app.schemas import ErrorBody, TrainInfo, TrainRequest
from app.services.live import LiveRuns

router = APIRouter(prefix="/api", tags=["train"], route_class=Answered)


def runs(request: Request) -> LiveRuns:
    return request.app.state.live


@router.get("/train", response_model=TrainInfo)
async def describe(request: Request) -> TrainInfo:
    """The "train it yourself" experiment: tasks, contestants, defaults, limits and the reference
    sweep (final accuracy against length at the default budget)."""
    return runs(request).describe()


@router.post("/train", response_class=StreamingResponse, responses={
    200: {"description": "One JSON object per line as the run goes (each checked by the server against "
                         "these shapes): the settings and the probe first (TrainStart), then progress lines "
                         "{contestant, step, seconds, loss, accuracy, token_accuracy, map?} (TrainProgress), "
                         "each contestant's last line with done: true (TrainFinal), a summary (TrainSummary), "
                         "and the process's own line (TrainEnd: peak memory, and an error when it was "
                         "stopped). When every slot is taken the run waits in a line first, and says so in "
                         "lines of its own: {queued: {place, starts_in}} (TrainQueued), again as its place "
                         "moves.",
          "content": {NDJSON: {}}},
    429: {"model": ErrorBody, "description": "this client already has a run going or waiting, the line is "
                                             "full, or the client's share of runs is used (Retry-After, "
                                             "RateLimit-Policy and RateLimit say when to ask again)"}})
async def train(body: TrainRequest, request: Request, share: Share) -> StreamingResponse:
    """Train the contestants live on the task, in a process of its own; the lines stream as they
    come. Limits are checked before any work (422); one run at a time per replica, and each client's
    share of runs (429)."""
    live = runs(request)
    config = live.settings(body.model_dump(exclude_none=True))
    share.take("train")
    lines = live.start(config, share.client)
    return StreamingResponse(lines, media_type=NDJSON, headers={"X-Accel-Buffering": "no"})
