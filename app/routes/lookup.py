from fastapi import APIRouter

from app.dependencies import ClientGone, Registry
from app.routes import Answered
from app.schemas.base import ErrorBody
from app.schemas.lookup import Lookup, LookupRequest
from app.services import lookup as service

router = APIRouter(prefix="/api", tags=["attention"], route_class=Answered)


@router.post("/lookup", response_model=Lookup, responses={404: {"model": ErrorBody}})
def lookup(body: LookupRequest, registry: Registry, gone: ClientGone) -> Lookup:
    """The attention chapter's last part: softmax(Q K^T / sqrt(d_k)) V on one head of the Transformer's first
    encoder self-attention layer, its scores and weights, and how far the mix of values is from the
    head's output in the model's own pass."""
    return service.answer(registry, body, gone)
