"""The thread policy of served work, in one place: how many intra-op threads a call gets.

torch splits an operation across its intra-op threads. A decoding search is a chain of operations
on rows of 256 to 1,024 numbers, too small to split: a second thread only adds a fork and a join
to each, and wakes between them, so a search runs on one thread (bench/floor.py times it both
ways). Batches and teacher-forced passes keep the count they were given. The searches of
models/decoding.py are the derivation's and know nothing of this; the server calls them through
the wrapped ones here.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Iterator

import torch

from models import decoding
from models.serving import search


def set_intra_op(threads: int) -> None:
    """The calling thread's intra-op count from now on (torch keeps it per process for MKL and per
    thread for OpenMP, so each worker thread sets its own)."""
    if threads != torch.get_num_threads():
        torch.set_num_threads(threads)


@contextlib.contextmanager
def intra_op(threads: int) -> Iterator[None]:
    """`threads` intra-op threads inside the block, the count before it restored after."""
    before = torch.get_num_threads()
    set_intra_op(threads)
    try:
        yield
    finally:
        set_intra_op(before)


def one_thread(search: Callable) -> Callable:
    """`search` run on one intra-op thread (see the module's docstring)."""

    @functools.wraps(search)
    def run(*args, **kwargs):
        with intra_op(1):
            return search(*args, **kwargs)

    return run


greedy = one_thread(search.greedy)  # one sentence through the recorded step, else decoding's: search.py
greedy_tokens = one_thread(search.greedy_tokens)
beam_search = one_thread(decoding.beam_search)
