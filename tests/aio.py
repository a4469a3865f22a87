"""Coroutines run from a synchronous test."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

T = TypeVar("T")


def run_async(coroutine: Coroutine[Any, Any, T]) -> T:
    """asyncio.run(coroutine) on a thread of its own. A test process (a pytest-xdist worker) runs
    browser tests and others in turn, and Playwright's sync API leaves its event loop marked as
    running on the thread it ran on, where asyncio.run then refuses to start."""
    with ThreadPoolExecutor(1, thread_name_prefix="test-loop") as thread:
        return thread.submit(asyncio.run, coroutine).result()
