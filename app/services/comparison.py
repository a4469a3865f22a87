"""POST /api/compare as a function: several models on one text, each answer handed over as soon as
it is ready (so in the order the models finish; each answer names its model).

Why one call for all of them: the page asks about the text at every keystroke, and five requests
per keystroke (and five aborts at the next one) took CPU from the models on a 2-core machine, where
the browser and the server share the cores. Every model's work is queued at once, as one turn of
the model thread that runs the models side by side, one per core (worker.run_together).

Each answer is what POST /api/attention answers for that model: for models without attention
the translation with no maps, computed the cheaper way /api/translate does (the same greedy
translation).

Every model's job also says how it runs stepped together with other readers' compares of that
model (stepped_decoding.Batchable, `ReaderPool`: one decoding step for every reader's sentence at a time,
models/serving/batch.py), which is how the model thread runs them unless Settings.batch_compares is
off (app/runtime/model_thread.py).
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from concurrent.futures import Future
from functools import partial

from app.runtime.errors import Abandoned
from app.runtime.gone import Gone
from app.runtime.registry import LoadedModel, ModelRegistry
from app.runtime.stepped_decoding import Batchable
from app.runtime.text import Source
from app.schemas.translation import Attention, CompareRequest, ModelFailure, Translation
from app.services.inference import join_pool, sentence_pool, step_pool
from app.services.maps import attention_maps_job, attention_of
from app.services.page import Cancel, PageRequest
from app.services.translation import translation_fields, translation_job
from models.decoding import Stopped

log = logging.getLogger("attention_lab")


def comparison(
    registry: ModelRegistry, text: str, names: tuple[str, ...] = (), cancel: threading.Event | None = None,
) -> Iterator[Attention | ModelFailure]:
    """Check the names (default: every loaded model) and the text, queue every model's work, and
    return the answers as they come, the first finished first: an Attention per model (`maps` empty
    without attention), or a ModelFailure for a model that failed. Raises before anything runs if a
    name is unknown (UnknownModelError) or the text is not valid (InvalidTextError)."""
    return _blocking(as_ready(queue_comparison(registry, text, names, cancel)))


def queue_comparison(
    registry: ModelRegistry, text: str, names: tuple[str, ...] = (), cancel: threading.Event | None = None,
) -> list[tuple[str, Future]]:
    """`comparison`'s checks and queued work: (model name, Future of its answer) per model, for
    `comparison` or an event loop's `as_ready`."""
    source = registry.source(text)  # the text first, as elsewhere
    names = names or tuple(registry.names)
    jobs = [(name, *_job(registry, name, text, cancel)) for name in names]  # every check before any work
    return list(zip(names, registry.jobs.submit_together(jobs, cancel, len(source.pieces)), strict=True))


def _job(registry: ModelRegistry, name: str, text: str, cancel: threading.Event | None):
    """The same job (and cache entry) as /api/attention, or /api/translate for no attention, and
    its Batchable: the same answer, stepped with other readers' (`ReaderPool`)."""
    entry = registry.get(name)
    maps = bool(entry.capabilities.attention_kinds)
    key, compute = (attention_maps_job if maps else translation_job)(registry, name, text, cancel=cancel)
    batchable = Batchable(("compare", name), key, registry.source(text),
                          partial(ReaderPool, registry, entry, maps), name, compute)
    return key, compute, batchable


def stepped(registry: ModelRegistry, name: str, source: Source, cancel: threading.Event | None) -> Batchable:
    """The Batchable of model `name` on `source`, as `_job` makes it: how a stepper process
    (app/runtime/stepper_client.py) rebuilds a reader's sentence from what the server sent it."""
    return _job(registry, name, source.text, cancel)[2]


class ReaderPool:
    """Readers' texts on one model, decoded a step at a time together (stepped_decoding.Pool over
    models/serving/batch.Pool): per text what `_job`'s compute answers, within float rounding."""

    def __init__(self, registry: ModelRegistry, entry: LoadedModel, maps: bool):
        self.registry, self.entry, self.maps = registry, entry, maps
        self.pool = sentence_pool(entry)

    def __len__(self) -> int:
        return len(self.pool)

    def join(self, sentences: list[tuple[object, Source, Callable[[], bool]]]) -> None:
        limit = self.registry.limits.max_target_tokens
        join_pool(self.entry, self.pool, [(source, limit, stop, self.maps, (handle, source))
                                          for handle, source, stop in sentences])

    def step(self) -> list[tuple[object, object]]:
        return [(handle, self._answer(source, result)) for (handle, source), result in step_pool(self.pool)]

    def _answer(self, source: Source, result):
        if isinstance(result, BaseException):
            return result
        try:
            if self.maps:
                return attention_of(self.registry.tokenizer, self.entry.name, source, result)
            return Translation(**translation_fields(self.entry.name, self.registry.tokenizer, source, *result))
        except Exception as error:  # this reader's answer alone
            return error


def _blocking(stream: AsyncIterator[Attention | ModelFailure]) -> Iterator[Attention | ModelFailure]:
    """`as_ready`'s lines for a caller without an event loop (tests, the CLI): one loop of its own
    runs the stream a line at a time, so both ways of asking share one implementation."""
    loop = asyncio.new_event_loop()
    try:
        while True:
            try:
                yield loop.run_until_complete(anext(stream))
            except StopAsyncIteration:
                return
    finally:  # also when the caller stops reading: what has not started is not run
        loop.run_until_complete(stream.aclose())
        loop.close()


async def as_ready(pending: list[tuple[str, Future]],
                   gone: Gone | None = None) -> AsyncIterator[Attention | ModelFailure]:
    """`comparison`'s answers for an event loop, which waits for them without holding a thread:
    the first finished first (the page draws each as it arrives). A `gone` flag (app/runtime/gone.py)
    that is set ends the stream at once, its work dropped (a newer text superseded it)."""
    ended = None if gone is None else gone.ended()
    waiting = {}
    for i, (name, future) in enumerate(pending):
        waiter = asyncio.wrap_future(future)
        waiter.add_done_callback(partial(_seen_if_dropped, future))
        waiting[waiter] = (i, name, future)
    try:
        while waiting:
            watched = [*waiting, ended] if ended else list(waiting)
            done, _ = await asyncio.wait(watched, return_when=asyncio.FIRST_COMPLETED)
            if ended in done:
                return
            for future in sorted(done, key=lambda f: waiting[f][0]):
                answer = _settled(waiting.pop(future)[1], future)
                if answer is None:
                    return
                yield answer
    finally:  # the client has gone: what has not started is not run
        for waiter in waiting:
            _drop(waiter)
        if ended is not None:
            ended.cancel()


def _seen_if_dropped(job: Future, waiter: asyncio.Future) -> None:
    """Work nobody wanted any more (Stopped, Abandoned) is read as soon as it settles: however the
    stream ends (and whenever its generator is collected), asyncio never logs it as an exception
    nobody retrieved; the worker counts it instead. Any other error is left unread here (the
    model thread's `job` is asked, not `waiter`), so `_settled` logs it, or asyncio does."""
    if waiter.cancelled() or job.cancelled():
        return
    if isinstance(job.exception(), Abandoned | Stopped):
        waiter.exception()  # marks it read


def _drop(waiter: asyncio.Future) -> None:
    """Nobody will read `waiter`: cancel it (and so the model thread's job, at once), or, when it is
    already settled, read its error, which asyncio would otherwise log as never retrieved. Work cut
    short this way is counted by the model thread (model_thread.ModelThread.dropped), not logged."""
    if not waiter.cancel() and not waiter.cancelled():
        waiter.exception()


def _settled(name: str, future) -> Attention | ModelFailure | None:
    """A finished job's line; None when its client has gone."""
    try:
        answer = future.result()
    except (Abandoned, Stopped):
        return None
    except Exception as error:  # one model failing leaves the others' answers standing
        log.exception("compare: %s failed", name)
        return ModelFailure(model=name, error=f"{type(error).__name__}: {error}")
    return answer if isinstance(answer, Attention) else Attention(**dict(answer), maps=[])


def answer(registry: ModelRegistry, body: CompareRequest, cancel: Cancel = None) -> list:
    return list(comparison(registry, body.text, tuple(body.models), cancel))


# the first screen's cards, and the bottleneck, attention and heads chapters' maps: every model, the
# last loaded first
PAGE = PageRequest("/api/compare", CompareRequest, answer,
                   lambda v: [{"text": v.text, "models": list(v.models[::-1])}])
