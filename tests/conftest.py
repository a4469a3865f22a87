import asyncio

import pytest
import torch

# The suite's models are tiny: one intra-op thread is as fast as two for them, and it stops the
# test processes (and the uvicorn servers they start) from fighting over the machine's 2 cores.
torch.set_num_threads(1)

# The order in which the workers take the files (make test hands each worker whole files: --dist
# loadfile). Browser files, whose time is mostly the page's drawing, alternate with files of other
# tests, many of which wait on a server starting or a stream's deadline; each kind's longest files
# come first, so that the short ones left at the end keep both workers busy to the last. In the
# order collected, both workers ran the waiting kind at once, and a core was idle 15-25% of that time.

# seconds a test took on average in a whole run here: a browser test, one marked slow, any other
BROWSER_S, SLOW_S, OTHER_S = 4.5, 10.7, 0.35


def pytest_collection_modifyitems(items):
    modules: dict[str, list] = {}
    for item in items:
        modules.setdefault(item.nodeid.split("::")[0], []).append(item)

    def seconds(tests) -> float:
        return sum(BROWSER_S if t.get_closest_marker("browser") else SLOW_S if t.get_closest_marker("slow")
                   else OTHER_S for t in tests)

    browser = [tests for path, tests in modules.items() if path.startswith("tests/browser/")]
    others = [tests for path, tests in modules.items() if not path.startswith("tests/browser/")]
    longest_first = {"key": seconds, "reverse": True}
    queues = {"browser": sorted(browser, **longest_first), "other": sorted(others, **longest_first)}
    total = {kind: sum(map(seconds, queue)) or 1.0 for kind, queue in queues.items()}
    done = dict.fromkeys(queues, 0.0)
    items[:] = []
    while any(queues.values()):  # next: the kind least far through its own time
        kind = min((k for k in queues if queues[k]), key=lambda k: done[k] / total[k])
        tests = queues[kind].pop(0)
        done[kind] += seconds(tests)
        items.extend(tests)


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
