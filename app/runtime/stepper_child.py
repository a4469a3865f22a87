"""A stepper process (started by app/runtime/stepper_client.py as `python -m app.runtime.stepper_child FD`):
it loads the models with the server's serving settings, then steps the sentences the server sends
on a model thread of one lane, answering each, and reports what its model thread did. Its messages
are app/runtime/stepper_messages.py's."""

from __future__ import annotations

import contextlib
import logging
import os
import pickle
import sys
import threading
from concurrent.futures import Future
from dataclasses import replace
from multiprocessing.connection import Connection
from typing import Any

from app.runtime.counters import Load
from app.runtime.errors import Abandoned
from app.runtime.loading import freeze_start_up_heap, load_registry
from app.runtime.model_thread import ModelThread
from app.runtime.stepper_messages import Close, Done, Drop, Join, Ready, Report, StepperConfig
from models.decoding import Stopped

REPORT_S = 0.02  # how often a busy process reports its model thread's figures and its queue's age


class _Relayed(Load):
    """A stepper process's model thread figures, kept until the next report as well."""

    def __init__(self):
        super().__init__()
        self.pending_ran: list[tuple[str, int]] = []
        self.pending_waits: list[tuple[str, float]] = []

    def ran(self, together: int, model: str = "") -> None:
        super().ran(together, model)
        with self._lock:
            self.pending_ran.append((model, together))

    def waited(self, model: str, seconds: float) -> None:
        super().waited(model, seconds)
        with self._lock:
            self.pending_waits.append((model, seconds))

    def taken(self) -> tuple[list, list]:
        with self._lock:
            ran, waits = self.pending_ran, self.pending_waits
            self.pending_ran, self.pending_waits = [], []
        return ran, waits


def serve(conn, config: StepperConfig) -> None:
    """A stepper process: load the models, then step the sentences sent until told to close (or
    until the server's end of the pipe closes)."""
    with contextlib.suppress(OSError):  # the whole process steps back for the server's event loop
        os.nice(config.nice)
    load = _Relayed()
    worker = ModelThread(torch_threads=1, lanes=1, batching=True, pool_rows=config.pool_rows, load=load)
    registry = load_registry(config.checkpoints, config.models, config.device, cache_size=0,
                             limits=config.limits, thread=worker, layout=config.layout,
                             precision=config.precision, step=config.step)
    freeze_start_up_heap()  # as the server does: no full collection walks the loaded models
    sending = threading.Lock()
    cancels: dict[int, threading.Event] = {}
    stop = threading.Event()

    def send(message: Ready | Done | Report) -> None:
        with sending, contextlib.suppress(OSError, ValueError):
            try:
                conn.send(message)
            except (pickle.PicklingError, TypeError, AttributeError) as error:  # an answer that cannot travel
                conn.send(Done(message.sid, RuntimeError(f"{type(message.result).__name__}: {error}")))

    def answered(sid: int, future: Future) -> None:
        cancels.pop(sid, None)
        if future.cancelled():
            result: Any = Abandoned()
        else:
            error = future.exception()
            result = future.result() if error is None else portable(error)
        send(Done(sid, result))

    def report() -> None:
        told: dict[str, float] = {}  # the queue's ages last sent
        while not stop.wait(REPORT_S):
            ran, waits = load.taken()
            ages = worker.ages()
            if worth_reporting(ran, waits, ages, told):
                send(Report(ages, ran, waits))
                told = ages

    send(Ready())
    threading.Thread(target=report, name="stepper-report", daemon=True).start()
    try:
        while True:
            try:
                message = conn.recv()
            except (EOFError, OSError):
                return
            if isinstance(message, Join):
                sid = message.sid
                cancel = cancels[sid] = threading.Event()
                try:
                    job = config.job(registry, message.model, message.item, cancel)
                    job = replace(job, client=message.client)
                    future = worker.step_together(job, cancel)
                except Exception as error:  # this sentence's answer
                    cancels.pop(sid, None)
                    send(Done(sid, portable(error)))
                    continue
                future.add_done_callback(lambda f, sid=sid: answered(sid, f))
            elif isinstance(message, Drop):
                cancel = cancels.get(message.sid)
                if cancel is not None:
                    cancel.set()
            elif isinstance(message, Close):
                return
    finally:
        stop.set()
        registry.close()


def worth_reporting(ran: list, waits: list, ages: dict[str, float], told: dict[str, float]) -> bool:
    """Whether a stepper process reports now: it has figures, or a queue, or its queue emptied since
    it last told a nonzero age (a sentence dropped before its first step leaves no step to report,
    and the server would go on adding time to the old age, refusing every request)."""
    return bool(ran or waits or ages or told)


def portable(error: BaseException) -> BaseException:
    """`error` as it can be sent back: itself when it pickles, else a RuntimeError saying what it was."""
    if isinstance(error, Stopped | Abandoned):
        return error
    try:
        pickle.dumps(error)
        return error
    except Exception:
        return RuntimeError(f"{type(error).__name__}: {error}")


def main() -> None:
    """The stepper process's entry point: its line to the server is the socket numbered argv[1]."""
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s: stepper: %(message)s")
    conn = Connection(int(sys.argv[1]))
    try:
        config = conn.recv()
    except (EOFError, OSError):
        return
    serve(conn, config)


if __name__ == "__main__":
    main()
