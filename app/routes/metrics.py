from fastapi import APIRouter, Request, Response

from app.runtime.metrics import CONTENT_TYPE

router = APIRouter(tags=["health"])


@router.get("/metrics", response_class=Response, responses={200: {"content": {CONTENT_TYPE: {}},
            "description": "Prometheus's text format (deploy/README.md lists the series)"}})
async def metrics(request: Request) -> Response:
    """What an operator scrapes: request latencies per route, the model thread's queue depth, busy
    time and batch sizes, requests in flight, refused, superseded and dropped, the result cache, the
    live training slots (app/runtime/metrics.py)."""
    return Response(request.app.state.metrics.render(), media_type=CONTENT_TYPE)
