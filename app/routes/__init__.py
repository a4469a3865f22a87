"""One APIRouter per concern; each handler validates, calls one service and returns its result.

The routers answering with one of app.schemas' models use `Answered` routes: the services build
and check their answers as those models (extra keys refused, every field typed), so the answer is
written to JSON once, by pydantic-core. FastAPI's own way dumps it to Python objects, validates
them again against the same model and encodes them with `json`, several times the work for a
Transformer's attention maps and a noticeable share of the request over HTTP.
"""

import functools
import inspect

from fastapi import Response
from fastapi.routing import APIRoute

from app.schemas.base import Response as Answer

JSON = "application/json"
NDJSON = "application/x-ndjson"  # streamed answers: one JSON object per line


class Answered(APIRoute):
    """A route whose handler's answer, when it is an instance of the route's response model, is
    sent as that model's JSON without FastAPI validating it again. Any other return value (a
    Response, a list) takes FastAPI's way. Handlers that set the status through an injected
    Response (GET /api/health) also keep FastAPI's way, which applies it."""

    def __init__(self, path: str, endpoint, **kwargs) -> None:
        model = kwargs.get("response_model")
        if isinstance(model, type) and issubclass(model, Answer) and not _sets_status(endpoint):
            endpoint = _dumping(endpoint, model, bool(kwargs.get("response_model_exclude_none")))
        super().__init__(path, endpoint, **kwargs)


def _sets_status(endpoint) -> bool:
    return any(p.annotation is Response for p in inspect.signature(endpoint).parameters.values())


def _dumping(endpoint, model: type[Answer], exclude_none: bool):
    """`endpoint`, sync or async as it was (FastAPI runs a sync one on its thread pool), with its
    answer written to JSON when it is a `model`."""

    def sent(answer):
        if isinstance(answer, model):
            return Response(answer.to_json(exclude_none), media_type=JSON)
        return answer

    if inspect.iscoroutinefunction(endpoint):
        @functools.wraps(endpoint)
        async def answered(*args, **kwargs):
            return sent(await endpoint(*args, **kwargs))
    else:
        @functools.wraps(endpoint)
        def answered(*args, **kwargs):
            return sent(endpoint(*args, **kwargs))
    return answered
