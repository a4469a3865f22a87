from fastapi import APIRouter, Response

from app.dependencies import Registry
from app.routes import Answered
from app.schemas import Health
from app.services import catalog

router = APIRouter(prefix="/api", tags=["health"], route_class=Answered)


@router.get("/health", response_model=Health, responses={503: {"model": Health}})
async def health(registry: Registry, response: Response) -> Health:
    """Whether the server serves, on which device, and which models did not load (and why).
    503 when no model loaded at all, so load balancers and readiness probes keep traffic away."""
    body = catalog.health(registry)
    if body.status != "ok":
        response.status_code = 503
    return body


@router.head("/health", include_in_schema=False)
async def health_head(registry: Registry) -> Response:
    """The same status as GET, without the body (monitors that only look at the code)."""
    return Response(status_code=200 if catalog.health(registry).status == "ok" else 503)
