import asyncio

import pytest
import torch

# The suite's models are tiny: one intra-op thread is as fast as two for them, and it stops the
# test processes (and the uvicorn servers they start) from fighting over the machine's 2 cores.
torch.set_num_threads(1)


@pytest.fixture(autouse=True)
def no_event_loop_left_running(request):
    """Playwright's sync API marks its event loop as running on the thread that drives the browser,
    for as long as the browser is open (a session fixture); a worker's later tests that run an event
    loop of their own on that thread (asyncio.run, app/services/comparison.py's blocking iterators)
    would be refused. Outside the browser tests, no loop runs there, so none is marked for them."""
    running = asyncio.events._get_running_loop()
    if running is None or request.node.get_closest_marker("browser"):
        yield
        return
    asyncio.events._set_running_loop(None)
    try:
        yield
    finally:
        asyncio.events._set_running_loop(running)
