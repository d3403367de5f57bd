"""Running LanceDB's async API from synchronous code, one event loop per calling thread.

LanceDB's synchronous ``Table`` hands every call to a background event loop and waits for it: a
search built from it crossed threads about a dozen times (each query, its schema look-ups, the
version check), which cost more than the queries themselves on two cores (design §5.7).
A read that awaits ``AsyncTable`` queries inside one coroutine, run here on the caller's own
thread, crosses no thread of ours and lets its independent queries run side by side.

``run`` keeps one ``asyncio.Runner`` per thread, so a thread that searches repeatedly reuses its
loop. A caller already inside a running event loop (an async assistant calling the synchronous
library) cannot block that loop's thread on another loop: its coroutine runs on a worker thread
with that thread's own loop instead.
"""

import asyncio
import os
import threading
from collections.abc import Coroutine
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

T = TypeVar("T")

_LOCAL = threading.local()
_FROM_RUNNING_LOOP = ThreadPoolExecutor(max_workers=2, thread_name_prefix="memory-async-reads")


def run(coro: Coroutine[Any, Any, T]) -> T:
    """Run ``coro`` to completion and return its result (its exception propagates)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return _runner().run(coro)
    return _FROM_RUNNING_LOOP.submit(lambda: _runner().run(coro)).result()


def _runner() -> asyncio.Runner:
    runner: asyncio.Runner | None = getattr(_LOCAL, "runner", None)
    if runner is None:
        runner = _LOCAL.runner = asyncio.Runner()
    return runner


def _forget_loops() -> None:
    """A forked child must not reuse its parent's loops (their selectors are the parent's)."""
    global _LOCAL
    _LOCAL = threading.local()


os.register_at_fork(after_in_child=_forget_loops)
