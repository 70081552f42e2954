"""An aiokafka consumer for synchronous code: its event loop runs on a thread of its own.

A synchronous reader that parses a whole log (the projector) spends most of its
reading time in kafka-python's record parser, which is pure Python: about 8 µs of
CPU per small record against 2 µs for aiokafka's compiled one, measured reading the
same 20,000 events from Apache Kafka. This class keeps the caller synchronous and
lets aiokafka fetch and parse: each method runs on the loop's thread and waits for its
answer. aiokafka's consumer is not thread-safe, so nothing here touches it from the
caller's thread.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from typing import Any, TypeVar

from goaicore.kafka.aio_connection import partitions_of, start_consumer
from goaicore.settings import Settings

T = TypeVar("T")


class ThreadedConsumer:
    """A started aiokafka consumer behind blocking calls; ``close()`` stops its thread.

    Partitions are assigned, never subscribed: the group id (if any) is for commits.
    """

    def __init__(self, settings: Settings, name: str = "goaicore", **overrides: Any) -> None:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self._loop.run_forever, name=f"{name}-kafka", daemon=True
        )
        self._thread.start()
        try:
            self._consumer = self._wait(start_consumer(settings, client_id=name, **overrides))
        except BaseException:
            self._stop_loop()
            raise

    def _wait(self, awaitable: Awaitable[T]) -> T:
        async def run() -> T:
            return await awaitable

        return asyncio.run_coroutine_threadsafe(run(), self._loop).result()

    def _on_loop(self, fn: Callable[[], T]) -> T:
        async def run() -> T:
            return fn()

        return self._wait(run())

    def partitions(self, topic: str) -> list[Any]:
        """Every partition of ``topic``; MissingTopicError when it does not exist."""
        return self._wait(partitions_of(self._consumer, topic))

    def assign_at(self, positions: Mapping[Any, int]) -> None:
        """Read exactly these partitions, each from its offset."""

        def assign() -> None:
            self._consumer.assign(list(positions))
            self._seek_all(positions)

        self._on_loop(assign)

    def seek(self, positions: Mapping[Any, int]) -> None:
        """Read these partitions from these offsets next (records fetched ahead are dropped)."""
        self._on_loop(lambda: self._seek_all(positions))

    def _seek_all(self, positions: Mapping[Any, int]) -> None:  # on the loop's thread
        for partition, offset in positions.items():
            self._consumer.seek(partition, offset)

    def poll(self, timeout_ms: int, max_records: int) -> dict[Any, list[Any]]:
        """At most ``max_records`` records by partition; waits up to ``timeout_ms`` for any."""
        return self._wait(self._consumer.getmany(timeout_ms=timeout_ms, max_records=max_records))

    def commit_soon(
        self, offsets: Mapping[Any, int], on_error: Callable[[BaseException], None]
    ) -> None:
        """Commit ``offsets`` to the group without waiting; ``on_error`` (on the loop's
        thread) if the commit fails."""

        def done(task: asyncio.Future[None]) -> None:
            error = None if task.cancelled() else task.exception()
            if error is not None:
                on_error(error)

        def start() -> None:
            self._loop.create_task(self._consumer.commit(dict(offsets))).add_done_callback(done)

        self._loop.call_soon_threadsafe(start)

    def read_to(self, partitions: Sequence[Any]) -> dict[Any, tuple[int, int | None]]:
        """Per partition, its position (the next offset ``poll`` returns) and the high
        watermark the fetches last reported (None before any fetch of it)."""

        async def read() -> dict[Any, tuple[int, int | None]]:
            return {
                tp: (await self._consumer.position(tp), self._consumer.highwater(tp))
                for tp in partitions
            }

        return self._wait(read())

    def end_offsets(self, partitions: Iterable[Any]) -> dict[Any, int]:
        """The broker's end offset of each partition, asked now."""
        return self._wait(self._consumer.end_offsets(list(partitions)))

    def close(self) -> None:
        """Stop the consumer (leaving nothing committed that was not asked) and its thread."""
        try:
            self._wait(self._consumer.stop())
        finally:
            self._stop_loop()

    def _stop_loop(self) -> None:
        async def cancel_the_rest() -> None:  # commits still in flight
            tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

        try:
            self._wait(cancel_the_rest())
        finally:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join()
            self._loop.close()
