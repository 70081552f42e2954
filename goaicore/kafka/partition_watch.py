"""Wait for new records of a partition without sleeping on a timer.

:class:`AsyncPartitionWatch` has a consumer of its own: a connection of its own, since
a broker answers one connection's requests in order and a fetch waiting there would
hold up a reader's questions behind it. While anyone waits, it fetches the partitions
waited on, each from the offset waited past, and the broker answers as soon as records
arrive in any of them (else after the profile's ``watch_wait_ms``, and it fetches
again): a waiter learns of its records one fetch answer after the broker has them. It
asks for little of each partition (a waiter wants to know that records came, not what
they hold), and it fetches nothing while nobody waits.

A wait on a partition the watch is not fetching yet makes it fetch that one too; the
broker takes the new fetch once it has answered the one it holds (at once if records
came, else within ``watch_wait_ms``): a waiter waits on the others no longer than that.

On the embedded broker a fetch that finds no records waits its whole max wait even when
records arrive meanwhile, so its profile fetches with a short max wait: a short poll.
"""

from __future__ import annotations

import asyncio
from collections import defaultdict
from typing import Any, Self

from goaicore.errors import client_errors
from goaicore.kafka.aio_connection import ConsumerReader, start_consumer
from goaicore.kafka.profile import client_profile
from goaicore.settings import Settings

FETCH_BYTES = 1024
"""The most of each partition one fetch asks for (a broker still sends a whole first
batch when it is larger)."""


class AsyncPartitionWatch(ConsumerReader):
    """Wait until a partition of ``<prefix>.<topic>`` has records at or after an offset
    (see the module docstring)."""

    def __init__(self, settings: Settings | None, topic: str) -> None:
        super().__init__(settings, topic)
        self._waiting: dict[int, list[tuple[int, asyncio.Future[int]]]] = defaultdict(list)
        self._ends: dict[int, int] = {}
        """While watching: each watched partition's end as far as fetches showed it (every
        record below it is on the broker)."""
        self._starts: dict[int, int] = {}
        """While watching: the partitions fetched, and the offset each was fetched from."""
        self._task: asyncio.Task[None] | None = None
        self._fetching = False
        """The watch awaits a fetch's records: a wait may cut that short."""
        self._cut = False
        """A wait cut the fetch short: the watch goes on (its task's cancellation is
        this, not a close)."""

    async def start(self) -> Self:
        if self._consumer is None:
            self._consumer = await start_consumer(
                self.settings,
                fetch_max_wait_ms=client_profile(self.settings).watch_wait_ms,
                max_partition_fetch_bytes=FETCH_BYTES,
            )
        return self

    async def wait_past(
        self,
        partition: int,
        offset: int,
        timeout: float,  # noqa: ASYNC109 - the caller's deadline bounds the wait
    ) -> int | None:
        """Once ``partition`` holds records at ``offset`` or after, an end it has reached
        (past ``offset``: every record below it is on the broker); None when ``timeout``
        seconds pass first."""
        self._started()
        known = self._ends.get(partition, 0)
        if self._task is not None and known > offset:
            return known
        waiter: asyncio.Future[int] = asyncio.get_running_loop().create_future()
        entry = (offset, waiter)
        self._waiting[partition].append(entry)
        if self._task is None:
            self._task = asyncio.create_task(self._watch())
        elif offset < self._starts.get(partition, offset + 1) and self._fetching:
            # Not fetched (from there): the fetch under way stops waiting for records, and
            # the watch fetches this one too. Else the watch sees it before it fetches.
            self._cut, self._fetching = True, False
            self._task.cancel()
        try:
            return await asyncio.wait_for(waiter, max(timeout, 0))
        except TimeoutError:
            return None
        finally:
            waiting = self._waiting.get(partition)
            if waiting is not None and entry in waiting:
                waiting.remove(entry)
                if not waiting:
                    del self._waiting[partition]

    async def close(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
        await super().close()

    async def _watch(self) -> None:
        """Fetch the partitions waited on while anyone waits, waking each waiter whose
        records came; a broker error reaches every waiter."""
        consumer = self._started()
        wait_ms = client_profile(self.settings).watch_wait_ms
        task = asyncio.current_task()
        assert task is not None
        try:
            with client_errors():
                while starts := self._wanted():
                    if any(start < self._starts.get(p, start + 1) for p, start in starts.items()):
                        self._assign(consumer, starts)
                    self._fetching = True
                    try:
                        fetched = await consumer.getmany(timeout_ms=wait_ms)
                    except asyncio.CancelledError:
                        if not self._cut or task.uncancel() > 0:
                            raise  # closed
                        # Assigned afresh from what is waited for: records the cut fetch
                        # may have taken are fetched again.
                        self._cut, self._starts = False, {}
                        continue
                    finally:
                        self._fetching = False
                    # Nothing awaits from here to the next fetch (or to the pause below):
                    # the consumer sends no fetch for partitions nobody waits on any more.
                    for tp, records in fetched.items():
                        if records:
                            self._advance(tp.partition, records[-1].offset + 1)
                    for tp in consumer.assignment():
                        highwater = consumer.highwater(tp)
                        if highwater is not None:
                            self._advance(tp.partition, highwater)
                        if tp.partition in self._ends:  # the records below are known to
                            consumer.seek(tp, self._ends[tp.partition])  # be there: skip them
                    self._wake()
        except Exception as err:  # the waiters' to raise: nobody awaits this task
            for waiting in self._waiting.values():
                for _, waiter in waiting:
                    if not waiter.done():
                        waiter.set_exception(err)
        finally:
            # Nobody waits (or the watch failed or closed): fetch nothing until somebody
            # does. No await between the last look at the waiters and here, so a wait that
            # comes later starts a new watch.
            if self._consumer is not None and consumer.assignment():
                consumer.pause(*consumer.assignment())
            self._ends, self._starts = {}, {}
            if self._task is task:
                self._task = None

    def _wanted(self) -> dict[int, int]:
        """The partitions someone still waits on, each with the lowest offset waited past."""
        wanted = {}
        for partition, waiting in self._waiting.items():
            offsets = [offset for offset, waiter in waiting if not waiter.done()]
            if offsets:
                wanted[partition] = min(offsets)
        return wanted

    def _assign(self, consumer: Any, starts: dict[int, int]) -> None:
        """Fetch each partition of ``starts`` from its offset (at or past where the
        watch fetched it to: a waiter below that is woken already), and no other;
        afresh, with no high watermark from before."""
        from aiokafka import TopicPartition  # type: ignore[import-untyped]

        partitions = {p: TopicPartition(self.topic, p) for p in sorted(starts)}
        consumer.assign(list(partitions.values()))
        for partition, tp in partitions.items():
            consumer.seek(tp, starts[partition])
        self._starts = dict(starts)

    def _advance(self, partition: int, end: int) -> None:
        if end > self._ends.get(partition, 0):
            self._ends[partition] = end

    def _wake(self) -> None:
        """Wake each waiter whose records came."""
        for partition, waiting in self._waiting.items():
            end = self._ends.get(partition, 0)
            for offset, waiter in waiting:
                if end > offset and not waiter.done():
                    waiter.set_result(end)
