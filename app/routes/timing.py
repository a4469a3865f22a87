from typing import Annotated

from fastapi import APIRouter, Body

from app.dependencies import Registry, share_of
from app.routes import Answered
from app.schemas.base import ErrorBody
from app.schemas.timing import TimingRequest, Timings, TimingStatus
from app.services.timing import bench

router = APIRouter(prefix="/api", tags=["timing"], route_class=Answered)
Measurements = share_of("timing", refuse=False)  # a kept result is free even with the share spent


@router.post("/timing", response_model=Timings, responses={
    404: {"model": ErrorBody},
    429: {"model": ErrorBody, "description": "a measurement is running (GET /api/timing/status says how far it "
                                             "is), or this client's share of measurements is used; "
                                             "Retry-After says when to ask again"}})
def timing(registry: Registry, share: Measurements,
           body: Annotated[TimingRequest | None, Body()] = None) -> Timings:
    """The parallel chapter: wall time of a recurrent (LSTM) encoder against one without recurrence (the
    Transformer's), by input length, on this server's device. Takes up to ~20 s the first time;
    the result is kept and answered at once after (`measured_at` says when it was measured;
    `refresh` measures again)."""
    body = body or TimingRequest()
    # a kept result costs nothing; every measurement that runs (a refresh, new lengths or models)
    # takes one of the client's share as it starts
    return bench(registry).timing(registry, body.lengths, body.refresh, body.recurrent, body.parallel,
                                  admit=share.take)


@router.get("/timing/status", response_model=TimingStatus)
def status(registry: Registry) -> TimingStatus:
    """How far the running timing measurement is (poll it while POST /api/timing waits)."""
    return bench(registry).status()
