from typing import Annotated

from fastapi import APIRouter, Body

from app.dependencies import Registry
from app.routes import Answered
from app.schemas import ErrorBody, TimingRequest, Timings, TimingStatus
from app.services.timing import bench

router = APIRouter(prefix="/api", tags=["timing"], route_class=Answered)


@router.post("/timing", response_model=Timings, responses={
    404: {"model": ErrorBody},
    429: {"model": ErrorBody, "description": "a measurement is running; the Retry-After header says when to "
                                             "ask again, GET /api/timing/status how far it is"}})
def timing(registry: Registry, body: Annotated[TimingRequest | None, Body()] = None) -> Timings:
    """Chapter 6: wall time of a recurrent (LSTM) encoder against one without recurrence (the
    Transformer's), by input length, on this server's device. Takes up to ~20 s the first time;
    the result is kept and answered at once after (`measured_at` says when it was measured;
    `refresh` measures again)."""
    body = body or TimingRequest()
    return bench(registry).timing(registry, body.lengths, body.refresh, body.recurrent, body.parallel)


@router.get("/timing/status", response_model=TimingStatus)
def status(registry: Registry) -> TimingStatus:
    """How far the running timing measurement is (poll it while POST /api/timing waits)."""
    return bench(registry).status()
