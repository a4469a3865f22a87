"""One thread runs all model work: loading the checkpoints and every forward and backward pass.

Why not the request threads themselves: PyTorch's CPU kernels parallelise through OpenMP, and
every thread that runs a parallel op gets a team of helper threads of its own. Once a second
thread has a team, the idle helpers of one fight the busy ones of the other for the cores: on
the 2-core machines a Transformer request took ~80 ms from a request thread against ~20 ms
from a thread that alone owns a team (measured in-process, two intra-op threads). With a single
model thread a request can use every core (cores.py decides how many), requests never share
model state, and the answers are the serial ones by construction. Requests queue for it, so
cached answers are served before they reach it (see ModelRegistry.result), and work whose client
has hung up is skipped (`cancel`).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TypeVar

import torch

from app.services.cores import CoreShare

T = TypeVar("T")


class Abandoned(Exception):
    """Nobody wants this answer any more (its client hung up), so it was not computed."""


class ModelThread:
    def __init__(self, torch_threads: int | None = None):
        """torch_threads: intra-op threads for the models; None: every core while the machine is
        otherwise quiet, one while other programs wait for the CPU (see cores.py)."""
        self.torch_threads = torch_threads
        self.cores = None if torch_threads else CoreShare(torch.get_num_threads())
        self._pool = ThreadPoolExecutor(1, thread_name_prefix="models", initializer=self._setup)

    def _setup(self) -> None:
        if self.torch_threads:
            torch.set_num_threads(self.torch_threads)

    def _share_cores(self) -> None:
        if self.cores is not None:
            threads = self.cores.threads()
            if threads != torch.get_num_threads():
                torch.set_num_threads(threads)

    def submit(self, fn: Callable[..., T], *args, cancel: threading.Event | None = None, **kwargs) -> Future[T]:
        """Queue fn(*args, **kwargs) for the model thread; its Future. If `cancel` is set by the
        time its turn comes, fn is not run and the Future raises Abandoned."""

        def job() -> T:
            if cancel is not None and cancel.is_set():
                raise Abandoned()
            self._share_cores()
            return fn(*args, **kwargs)

        return self._pool.submit(job)

    def run(self, fn: Callable[..., T], *args, cancel: threading.Event | None = None, **kwargs) -> T:
        """fn(*args, **kwargs) on the model thread; its result, or its exception re-raised here."""
        return self.submit(fn, *args, cancel=cancel, **kwargs).result()

    def close(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)
