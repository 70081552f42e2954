"""Run work items one at a time per key, in arrival order, and many keys at once.

Faust's ``concurrency=`` runs an agent's events in parallel with no regard for
keys, so it would reorder a conversation's requests. Here every key has its
own queue drained by its own task; a semaphore bounds how many items run at
once across keys, and ``submit`` blocks (back-pressure on the stream) when too
many items are waiting.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Awaitable, Callable, Hashable
from typing import Generic, TypeVar

log = logging.getLogger(__name__)

T = TypeVar("T")


class KeyedDispatcher(Generic[T]):
    """Items of one key run in submission order; up to ``concurrency`` keys at once."""

    def __init__(
        self, handle: Callable[[T], Awaitable[None]], concurrency: int, max_waiting: int
    ) -> None:
        self.handle = handle
        self._running = asyncio.Semaphore(concurrency)
        self._room = asyncio.Semaphore(max_waiting)
        self._queues: dict[Hashable, deque[T]] = {}
        self._tasks: set[asyncio.Task[None]] = set()

    @property
    def waiting(self) -> int:
        """Items submitted and not finished."""
        return sum(len(q) for q in self._queues.values())

    async def submit(self, key: Hashable, item: T) -> None:
        """Queue ``item`` behind the earlier items of ``key``."""
        await self._room.acquire()
        queue = self._queues.get(key)
        if queue is not None:
            queue.append(item)
            return
        self._queues[key] = deque([item])
        task = asyncio.ensure_future(self._drain(key))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _drain(self, key: Hashable) -> None:
        queue = self._queues[key]
        try:
            while queue:  # no await between this check and the removal below
                async with self._running:
                    try:
                        await self.handle(queue[0])
                    except Exception:
                        log.exception("work item for key %r failed", key)
                queue.popleft()
                self._room.release()
        finally:
            if self._queues.get(key) is queue:
                del self._queues[key]

    async def join(self) -> None:
        """Wait until every submitted item is finished."""
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)

    async def close(self) -> None:
        """Cancel what is running or waiting (their items are not finished)."""
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        self._queues.clear()
