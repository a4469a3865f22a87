import asyncio
import logging
from functools import partial

from fastapi import APIRouter, Request
from fastapi.responses import StreamingResponse
from starlette.types import Message, Send

from app.dependencies import share_of
from app.routes import NDJSON, Answered
from app.schemas.base import ErrorBody
from app.schemas.live import TrainInfo, TrainRequest
from app.services.live import LiveRuns

router = APIRouter(prefix="/api", tags=["train"], route_class=Answered)
log = logging.getLogger("attention_lab")


class WriteDeadline(Exception):
    """The client took no part of the answer within the deadline."""


class DeadlinedStream(StreamingResponse):
    """A stream whose client must keep reading. Once a client reads no more, the socket's buffers
    fill and the server's write waits, with no deadline of its own: the lines, and the training slot
    they hold, would wait for ever. A write that waits `deadline_s` ends the answer there: the lines
    are closed (their run ends and gives its slot back), and the answer returns unfinished, so the
    server closes the connection."""

    def __init__(self, content, deadline_s: float, **kwargs):
        super().__init__(content, **kwargs)
        self.deadline_s = deadline_s

    async def stream_response(self, send: Send) -> None:
        async def send_in_time(message: Message) -> None:
            try:
                async with asyncio.timeout(self.deadline_s):
                    await send(message)
            except TimeoutError as error:  # told apart from a TimeoutError of the lines themselves
                raise WriteDeadline from error

        try:
            await super().stream_response(send_in_time)
        except WriteDeadline:
            log.warning("train: the client read nothing for %g s: its answer is dropped", self.deadline_s)
            await self.body_iterator.aclose()  # the run ends, and its slot comes back, now
Runs = share_of("train")


def runs(request: Request) -> LiveRuns:
    return request.app.state.live


@router.get("/train", response_model=TrainInfo)
async def describe(request: Request) -> TrainInfo:
    """The "train it yourself" experiment: tasks, contestants, defaults, limits and the reference
    sweep (final accuracy against length at the default budget)."""
    return runs(request).describe()


# A run refused (POST /api/train and /api/teach): its OpenAPI response
RUN_REFUSED = {"model": ErrorBody, "description": "this client already has a run going or waiting, the line is "
                                                  "full, or the client's share of runs is used (Retry-After, "
                                                  "RateLimit-Policy and RateLimit say when to ask again)"}


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
    429: RUN_REFUSED})
async def train(body: TrainRequest, request: Request, share: Runs) -> StreamingResponse:
    """Train the contestants live on the task, in a process of its own; the lines stream as they
    come. Limits are checked before any work (422); one run at a time per replica, and each client's
    share of runs (429)."""
    live = runs(request)
    config = live.settings(body.model_dump(exclude_none=True))
    # the client's share is charged as the run starts: refused, or gone from the line first, is free
    lines = live.start(config, share.client, partial(share.charge_async, 1.0))
    return DeadlinedStream(lines, live.write_deadline_s, media_type=NDJSON, headers={"X-Accel-Buffering": "no"})
