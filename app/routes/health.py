from fastapi import APIRouter, Request, Response

from app.dependencies import Registry
from app.routes import Answered
from app.schemas.catalog import Clients, Health
from app.services import catalog

router = APIRouter(prefix="/api", tags=["health"], route_class=Answered)


def clients(request: Request) -> Clients:
    """How clients are told apart, and whether a proxy's readers are counted as one (app/clients.py)."""
    return Clients(**request.app.state.forwarding.report())


@router.get("/health", response_model=Health, responses={503: {"model": Health}})
async def health(registry: Registry, request: Request, response: Response) -> Health:
    """Whether the server serves, on which device, and which models did not load (and why).
    503 when no model loaded at all, so load balancers and readiness probes keep traffic away.
    `clients` says how the shares' clients are told apart, and names a proxy whose readers all
    count as one client (its X-Forwarded-For not believed)."""
    body = catalog.health(registry, clients(request))
    if body.status != "ok":
        response.status_code = 503
    return body


@router.head("/health", include_in_schema=False)
async def health_head(registry: Registry, request: Request) -> Response:
    """The same status as GET, without the body (monitors that only look at the code)."""
    return Response(status_code=200 if catalog.health(registry, clients(request)).status == "ok" else 503)
