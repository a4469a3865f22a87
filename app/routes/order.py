from fastapi import APIRouter

from app.dependencies import ClientGone, Registry
from app.routes import Answered
from app.schemas.base import ErrorBody
from app.schemas.order import Order, OrderRequest
from app.services import order as service

router = APIRouter(prefix="/api", tags=["chapters"], route_class=Answered)


@router.post("/order", response_model=Order, responses={404: {"model": ErrorBody}})
def order(body: OrderRequest, registry: Registry, gone: ClientGone) -> Order:
    """The order chapter: shuffle the words; with positional encoding off the encoder's self-attention is the
    original's permuted (to float rounding), with it on it is not. Also the sinusoidal table."""
    return service.answer(registry, body, gone)
