"""The FastAPI application: settings -> model registry (loaded once, in the lifespan) -> routers.

    python -m uvicorn app.main:app --host 127.0.0.1 --port 8000
"""

from __future__ import annotations

import gc
import importlib
import json
import logging
import math
import pkgutil
import re
from contextlib import asynccontextmanager

from fastapi import APIRouter, FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from fastapi.routing import APIRoute
from fastapi.staticfiles import StaticFiles

from app import routes as route_modules
from app.admission import Admission
from app.clients import ForwardedFor, Forwarding
from app.config import REPO_ROOT, Settings, get_settings
from app.disconnect import CancelOnDisconnect
from app.guard import BodyLimit, Compress, SecurityHeaders
from app.ratelimit import RateLimitHeaders
from app.request_log import RequestLog, configure_logging
from app.routes import docs
from app.runtime.errors import (
    Abandoned,
    BusyError,
    InvalidOptionError,
    InvalidTextError,
    NonFiniteAnswerError,
    NoResultsError,
    UnknownModelError,
    UnknownSnapshotError,
)
from app.runtime.loading import freeze_start_up_heap, load_registry
from app.runtime.metrics import Metrics
from app.runtime.model_thread import ModelThread
from app.runtime.registry import ModelRegistry
from app.runtime.scheduler import wait_met
from app.runtime.shares import Shares, ShareSpentError
from app.runtime.stepper_client import Steppers
from app.runtime.stepper_messages import StepperConfig
from app.schemas.base import NON_FINITE, ErrorBody
from app.services import ahead
from app.services.comparison import stepped
from app.services.live import LiveRuns
from app.services.teach import TeachRuns
from models.decoding import Stopped
from models.outputs import NonFiniteError

log = logging.getLogger("attention_lab")
CLIENT_CLOSED_REQUEST = 499  # nginx's code for a client that left before its answer
ECHO_CHARS = 64  # a 422 shows at most this much of the value it refuses
LONE_SURROGATE = re.compile("[\ud800-\udfff]")  # JSON's "\ud800" escapes: no character, no UTF-8


def stepper_processes(settings: Settings, registry: ModelRegistry) -> Steppers | None:
    """The processes that step readers' compares (app/runtime/stepper_client.py), started; None where the
    settings or the device leave that to the model thread."""
    worker = registry.jobs.thread
    count = worker.lanes if settings.step_processes is None else settings.step_processes
    if not count or not settings.batch_compares or registry.device.type != "cpu" or not registry.models:
        return None
    config = StepperConfig(settings.checkpoints, tuple(registry.models), settings.device, settings.limits,
                           registry.layout, registry.precision, registry.step, settings.pool_rows,
                           settings.stepper_nice, stepped)
    sizes = {entry.name: entry.parameters for entry in registry.models.values()}
    return Steppers(config, count, worker.load, worker.dropped, sizes, worker.step_together)


def create_app(settings: Settings | None = None) -> FastAPI:
    settings = settings or get_settings()
    configure_logging(settings.log_level)

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        forwarding.start_up()  # how clients are told apart, whose X-Forwarded-For is believed
        app.state.registry = load_registry(
            settings.checkpoints, settings.models, settings.device, settings.cache_size, settings.cache_mb,
            settings.limits, ModelThread(settings.torch_threads, settings.lanes, settings.model_nice,
                                         settings.batch_compares, settings.pool_rows),
            settings.layout, settings.precision, settings.step,
        )
        app.state.registry.jobs.steppers = stepper_processes(settings, app.state.registry)
        # the default sentence's answers, computed while nobody waits
        work = app.state.ahead = ahead.start(app.state.registry)
        freeze_start_up_heap()
        try:
            yield
        finally:  # also when the server is stopped by an error: the processes and threads end with it
            gc.unfreeze()  # collectable again once the app is gone (tests start many in one process)
            if work is not None:
                work.stop()
            await app.state.teach.close()
            app.state.registry.close()

    app = FastAPI(
        title="Attention Lab",
        description="Five translation models, from a plain RNN to a Transformer, and their internals.",
        version="1.0.0",
        lifespan=lifespan,
        docs_url=None,  # ours, offline (app/routes/docs.py), not FastAPI's CDN pages
        redoc_url=None,
    )
    app.state.registry = app.state.ahead = None
    app.state.live = LiveRuns(settings.checkpoints, settings.train_slots, settings.train_memory_mb,
                              write_deadline_s=settings.train_write_deadline_s)
    app.state.teach = TeachRuns(settings.checkpoints, settings.teach_slots, settings.teach_memory_mb,
                                write_deadline_s=settings.train_write_deadline_s, max_chars=settings.max_chars,
                                spare=settings.teach_spare, threads=settings.teach_threads)
    budgets = settings.share_budgets
    app.state.shares = Shares(budgets, settings.redis_url) if budgets else None
    forwarding = app.state.forwarding = Forwarding.from_environ()  # read as uvicorn reads it
    metrics = app.state.metrics = Metrics()
    metrics.watch(lambda: app.state.registry, app.state.live)
    app.add_middleware(RateLimitHeaders)  # a shared route's share, on its every answer
    app.add_middleware(Compress)
    app.add_middleware(CancelOnDisconnect, traffic=metrics.traffic)

    def waited(client: str) -> float:  # the wait a client's new request meets (none before loading)
        return 0.0 if app.state.registry is None else wait_met(app.state.registry.jobs.ages(), client)

    # inside BodyLimit (the last added runs first): a request counts, and meets the queue's age, only
    # once its whole body is read, so bodies trickled over many connections cannot fill the bound
    app.add_middleware(Admission, limit=settings.queue_limit, traffic=metrics.traffic, waited=waited,
                       max_wait=settings.max_wait)
    app.add_middleware(BodyLimit, max_bytes=settings.max_body_bytes, timeout=settings.body_timeout)
    app.add_middleware(SecurityHeaders)  # 413s, 408s and 503s get the headers too
    app.add_middleware(ForwardedFor, forwarding=forwarding)  # X-Forwarded-For that uvicorn did not believe
    app.add_middleware(RequestLog, metrics=metrics)  # outermost of ours: every answer is timed and logged
    for module in routers():
        document_errors(module.router)
        app.include_router(module.router)
    if settings.docs:
        app.include_router(docs.router)
        app.mount(docs.ASSETS_URL, StaticFiles(directory=docs.ASSETS), name="docs-assets")
    app.mount("/static", StaticFiles(directory=REPO_ROOT / "static"), name="static")
    add_error_handlers(app)
    return app


# What any model request (POST /api/...) may answer besides its own codes, so the schema lists them.
MODEL_ERRORS = {
    400: "the body is not UTF-8 JSON, or its Content-Length is not a number",
    408: "the body did not all arrive within ATTENTION_LAB_BODY_TIMEOUT seconds; the connection is closed",
    413: "the body is longer than the server's limit (ATTENTION_LAB_MAX_BODY_BYTES)",
    499: "the client hung up before its answer was ready (nobody reads this reply)",
    503: "too many model requests at once (Retry-After says when to try again), or the model computed "
         "a non-finite value",
}


def routers() -> list:
    """Every module of app/routes with a `router`, so a new route's module is served by being there;
    the docs pages only when the settings ask for them."""
    names = (m.name for m in pkgutil.iter_modules(route_modules.__path__))
    found = (importlib.import_module(f"app.routes.{name}") for name in names)
    return [module for module in found if hasattr(module, "router") and module is not docs]


def document_errors(router: APIRouter) -> None:
    for route in router.routes:
        if isinstance(route, APIRoute) and "POST" in route.methods and route.path.startswith("/api/"):
            for status, description in MODEL_ERRORS.items():
                # a $ref, not "model": FastAPI reads a route's response models once, when it is made
                route.responses.setdefault(status, {"description": description, "content": {
                    "application/json": {"schema": {"$ref": f"#/components/schemas/{ErrorBody.__name__}"}}}})


def add_error_handlers(app: FastAPI) -> None:
    """Service errors -> the contract's status codes; anything else -> a JSON 500 that says so.
    The last one is a safety net, not a way of handling input: no text should ever reach it."""

    @app.exception_handler(UnknownModelError)
    @app.exception_handler(UnknownSnapshotError)
    @app.exception_handler(NoResultsError)
    def unknown_model(request: Request, error: LookupError) -> JSONResponse:
        return JSONResponse({"detail": str(error.args[0])}, status_code=404)

    @app.exception_handler(RequestValidationError)
    def invalid_request(request: Request, error: RequestValidationError) -> JSONResponse:
        # FastAPI's own 422, with each refused value cut short: a 10 MB text is not sent back
        return JSONResponse({"detail": [short_input(e) for e in error.errors()]}, status_code=422)

    @app.exception_handler(InvalidTextError)
    def invalid_text(request: Request, error: InvalidTextError) -> JSONResponse:
        return _invalid("text", str(error))

    @app.exception_handler(InvalidOptionError)
    def invalid_option(request: Request, error: InvalidOptionError) -> JSONResponse:
        return _invalid(error.field, str(error), error.kind, error.ctx)

    @app.exception_handler(BusyError)
    def busy(request: Request, error: BusyError) -> JSONResponse:
        headers = {"Retry-After": str(error.retry_after), **getattr(error, "headers", {})}
        share = {"share": error.share} if isinstance(error, ShareSpentError) else {}
        return JSONResponse({"detail": str(error), **share}, status_code=429, headers=headers)

    @app.exception_handler(Abandoned)
    @app.exception_handler(Stopped)
    def client_gone(request: Request, error: Exception) -> Response:
        # the client hung up before the answer was ready: nobody reads this reply
        return Response(status_code=CLIENT_CLOSED_REQUEST)

    @app.exception_handler(NonFiniteAnswerError)
    @app.exception_handler(NonFiniteError)
    def non_finite(request: Request, error: ArithmeticError | ValueError) -> JSONResponse:
        # Weights checked at load cannot turn NaN, but a model may still overflow on an input: that
        # is the model's fault, said plainly, not a 500. (A NaN in a request is a 422: app/guard.py.)
        log.error("non-finite model output on %s %s", request.method, request.url.path)
        return JSONResponse({"detail": NON_FINITE}, status_code=503)

    @app.exception_handler(Exception)
    def unexpected(request: Request, error: Exception) -> JSONResponse:
        log.error("unexpected error on %s %s", request.method, request.url.path, exc_info=error)
        return JSONResponse({"detail": f"internal error ({type(error).__name__}); please report it"},
                            status_code=500)


def short_input(error: dict) -> dict:
    """One validation error with `input` (and `ctx`) no longer than ECHO_CHARS once written as JSON:
    a longer string is cut to its first ECHO_CHARS characters (marked with "..."), a longer list or
    object is replaced by its JSON's first characters. So is a name in `loc` (an unknown field's is
    the client's)."""
    error = dict(error)
    error.pop("url", None)
    error["loc"] = [p[:ECHO_CHARS] + "..." if isinstance(p, str) and len(p) > ECHO_CHARS else p
                    for p in error.get("loc", ())]
    for key in ("input", "ctx"):
        if key not in error:
            continue
        value = error[key]
        text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
        if len(text) > ECHO_CHARS:
            error[key] = text[:ECHO_CHARS] + "..."
        elif key == "ctx":
            error[key] = json.loads(json.dumps(value, default=str))
    return _encodable(error)


def _encodable(value):
    """`value` with lone surrogates as U+FFFD and NaN or infinities as their names: echoed as they
    came, the answer could not be encoded (500)."""
    if isinstance(value, str):
        return LONE_SURROGATE.sub("\ufffd", value)
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, list | tuple):
        return [_encodable(v) for v in value]
    if isinstance(value, dict):
        return {_encodable(k): _encodable(v) for k, v in value.items()}
    return value


def _invalid(field: str, message: str, kind: str = "value_error", ctx: dict | None = None) -> JSONResponse:
    """The same shape as FastAPI's own 422, so clients read one format."""
    detail = [{"type": kind, "loc": ["body", field], "msg": message, **({"ctx": ctx} if ctx else {})}]
    return JSONResponse({"detail": detail}, status_code=422)


app = create_app()
