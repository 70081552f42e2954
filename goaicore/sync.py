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
import sys
import threading
import weakref
from collections.abc import AsyncIterator, Coroutine, Iterator
from typing import Any, Generic, TypeVar

from goaicore.lifecycle import AsyncRunning, Closing

T = TypeVar("T")

_lock = threading.RLock()  # reentrant: a finalizer may run while this thread holds it
_loop: asyncio.AbstractEventLoop | None = None
_thread: threading.Thread | None = None
_owner = 0  # the process whose thread runs _loop: a forked child has the loop, not the thread

CLEANUP_WAIT = 5.0
"""Seconds a cleanup (closing a dropped client, an abandoned iterator) may take."""


def _background_loop() -> asyncio.AbstractEventLoop:
    global _loop, _thread, _owner
    with _lock:
        if _loop is None or _loop.is_closed() or _owner != os.getpid():
            loop = asyncio.new_event_loop()
            thread = threading.Thread(
                target=loop.run_forever, name="goaicore-sync-loop", daemon=True
            )
            thread.start()
            _loop, _thread, _owner = loop, thread, os.getpid()
        return _loop


def _running_loop() -> asyncio.AbstractEventLoop | None:
    """The private loop when its thread runs in this process, else None (never made here,
    forked from another process, or stopped as the interpreter exits)."""
    loop, thread = _loop, _thread
    if loop is None or thread is None or _owner != os.getpid() or not thread.is_alive():
        return None
    return loop


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


async def on_private_loop(coro: Coroutine[Any, Any, T], *, finish: bool = False) -> T:
    """Await ``coro`` run on the private loop, from any event loop or thread: for an
    object the caller may use from several loops (an Agents SDK session is called from
    ``Runner.run_sync``'s loop and from the caller's), whose connections belong to one.
    ``finish``: a caller cancelled meanwhile still waits for the outcome (a write is not
    left half known), then is cancelled, as the SDK's own sessions do."""
    loop = _background_loop()
    if asyncio.get_running_loop() is loop:
        return await coro
    outcome = asyncio.wrap_future(asyncio.run_coroutine_threadsafe(coro, loop))
    if not finish:
        return await outcome
    cancelled: asyncio.CancelledError | None = None
    while not outcome.done():
        try:
            await asyncio.wait({outcome})
        except asyncio.CancelledError as err:
            cancelled = cancelled or err
    if cancelled is not None:
        if not outcome.cancelled():
            outcome.exception()  # seen: the cancellation is what the caller gets
        raise cancelled
    return outcome.result()


def run_cleanup(coro: Coroutine[Any, Any, Any], owner: int | None = None) -> None:
    """Run a cleanup on the private loop, waiting for it at most :data:`CLEANUP_WAIT`
    seconds, and never raising: for finalizers and abandoned iterators. Skipped (the
    coroutine closed unrun) where it cannot run: in another process than ``owner``'s,
    with no loop running, or from the loop's own thread (started, not waited for)."""
    loop = None if sys.is_finalizing() else _running_loop()
    if loop is None or (owner is not None and owner != os.getpid()):
        coro.close()
        return
    future = asyncio.run_coroutine_threadsafe(coro, loop)
    if threading.current_thread() is _thread:
        return
    try:
        future.result(CLEANUP_WAIT)
    except Exception:  # a cleanup reports nothing and stops nothing (Ctrl-C does)
        future.cancel()


Core = TypeVar("Core", bound=AsyncRunning)


class Blocking(Closing, Generic[Core]):
    """A sync client over its started asyncio ``core``; ``close()`` closes the core.

    A client dropped without ``close()`` has its core closed once it is collected (or
    as the interpreter exits, waiting a few seconds for queued records to go), so its
    connections do not live on in the loop's thread.
    """

    def __init__(self, core: Core) -> None:
        self._core: Core = run_sync(core.start())
        self._closer = weakref.finalize(self, _close_dropped, self._core, os.getpid())

    def close(self) -> None:
        run_sync(self._core.close())
        self._closer.detach()


def _close_dropped(core: AsyncRunning, owner: int) -> None:
    run_cleanup(core.close(), owner)


def blocking_iter(items: AsyncIterator[T], owner: object = None) -> Iterator[T]:
    """The items of an async iterator, each awaited on the private loop; leaving the loop
    early (``break``, an error) closes the async iterator there too. ``owner`` (the
    facade the items come from) is kept alive while the iteration runs."""
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
            run_cleanup(close())
        del owner


async def _next(items: AsyncIterator[T]) -> T:
    return await anext(items)
