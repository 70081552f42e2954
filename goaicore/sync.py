"""Run the async API from synchronous code: ``Chat``'s sync calls, and the sync facades
over the asyncio stores, clients and readers (:class:`Blocking`: one core, two ways to
call it; the checks, the encoding and the error handling are written once, in the
asyncio core).

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
import weakref
from collections.abc import AsyncIterator, Coroutine, Iterator
from typing import Any, Generic, TypeVar

from goaicore.lifecycle import AsyncRunning, Closing

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


Core = TypeVar("Core", bound=AsyncRunning)


class Blocking(Closing, Generic[Core]):
    """A sync client over its started asyncio ``core``; ``close()`` closes the core.

    A client dropped without ``close()`` has its core closed once it is collected, so
    its connections do not live on in the loop's thread.
    """

    def __init__(self, core: Core) -> None:
        self._core: Core = run_sync(core.start())
        self._closer = weakref.finalize(self, _close_soon, self._core)

    def close(self) -> None:
        self._closer.detach()
        run_sync(self._core.close())


def _close_soon(core: AsyncRunning) -> None:
    run_soon(core.close())


def blocking_iter(items: AsyncIterator[T]) -> Iterator[T]:
    """The items of an async iterator, each awaited on the private loop; leaving the loop
    early (``break``, an error) closes the async iterator there too."""
    try:
        while True:
            try:
                item = run_sync(_next(items))
            except StopAsyncIteration:
                return
            yield item
    finally:
        close = getattr(items, "aclose", None)
        if close is not None:
            run_sync(close())


async def _next(items: AsyncIterator[T]) -> T:
    return await anext(items)
