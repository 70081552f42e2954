"""Sync clients as facades over the asyncio ones: one core, two ways to call it.

Each sync client holds its asyncio twin and runs every call on the private event loop
of :mod:`goaicore.sync` (one long-lived loop in a daemon thread), so the checks, the
encoding, the reply matching and the error handling are written once, in the asyncio
client. A sync call blocks only its own thread: many threads may call one client at
once, and their calls run concurrently on the loop.
"""

from __future__ import annotations

import weakref
from collections.abc import AsyncIterator, Iterator
from typing import Generic, TypeVar

from goaicore.lifecycle import AsyncRunning, Closing
from goaicore.sync import run_soon, run_sync

Core = TypeVar("Core", bound=AsyncRunning)
T = TypeVar("T")


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
