"""Run the async API from synchronous code: ``Chat``'s sync calls, and the sync facades
over the asyncio stores and clients.

Sync calls run their coroutine on one long-lived event loop in a daemon thread, rather
than ``asyncio.run`` per call: the SDK clients keep pooled connections that belong to
the loop that opened them, and reusing one loop keeps those connections warm. The call
blocks the calling thread, so it works from plain scripts, threads and even code that
has a loop of its own (which it blocks for the duration); it must not be called from a
coroutine running on that private loop.
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")

_lock = threading.Lock()
_loop: asyncio.AbstractEventLoop | None = None
_owner = 0  # the process whose thread runs _loop: a forked child has the loop, not the thread


def _background_loop() -> asyncio.AbstractEventLoop:
    global _loop, _owner
    with _lock:
        if _loop is None or _loop.is_closed() or _owner != os.getpid():
            loop = asyncio.new_event_loop()
            thread = threading.Thread(
                target=loop.run_forever, name="goaicore-sync-loop", daemon=True
            )
            thread.start()
            _loop, _owner = loop, os.getpid()
        return _loop


def run_sync(coro: Coroutine[Any, Any, T]) -> T:
    """Run ``coro`` to completion on the private loop and return its result."""
    loop = _background_loop()
    try:
        running = asyncio.get_running_loop()
    except RuntimeError:
        running = None
    if running is loop:
        coro.close()
        raise RuntimeError("a sync goaicore call cannot run inside its own event loop")
    future = asyncio.run_coroutine_threadsafe(coro, loop)
    try:
        return future.result()
    except BaseException:
        future.cancel()  # e.g. KeyboardInterrupt: do not leave the turn running
        raise


def run_soon(coro: Coroutine[Any, Any, Any]) -> None:
    """Start ``coro`` on the private loop without waiting for it (a cleanup that must not
    block, e.g. from a finalizer)."""
    asyncio.run_coroutine_threadsafe(coro, _background_loop())
