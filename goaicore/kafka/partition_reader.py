"""Read a partition from an offset to the end it had when the read began.

On Apache Kafka (the standard profile) that end is the broker's end-offset answer
at the start. Some brokers (the embedded one) answer end offsets too low when the
last batch holds several records, and a reader that trusted them would stop
early: there the end is the high watermark the first fetch response carries.
Either way a partition that keeps growing cannot keep the reader going forever.

:func:`read_to_end` reads with a kafka-python consumer, :func:`read_to_end_async`
with an aiokafka one, and :func:`read_partitions_async` several partitions at once
with an aiokafka one (its C record parser reads a whole log about three times as
fast as kafka-python); all follow one :class:`PartitionEnd` per partition.

An aiokafka consumer fetches in the background whatever is assigned and not paused,
and a broker answers the requests of one connection in order: a fetch left waiting at
the end of a partition (up to the consumer's ``fetch_max_wait_ms``) would hold up the
next read's offset questions behind it. So the asyncio readers fetch a partition only
while records are wanted from it: paused from its assignment until its end is known
to lie ahead (or is asked of a fetch), and again as soon as its end is read.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from goaicore.errors import BrokerError, client_errors
from goaicore.kafka.profile import client_profile
from goaicore.settings import Settings

POLL_MS = 200
MAX_RECORDS = 2000
END_POLL_MS = 5
"""How long one wait for records lasts while a read's end is not known yet (a profile
whose end offsets are not trusted learns it from the first fetch's answer, which wakes
no wait for records when it has none): the wait is repeated until that answer came."""


class LogReadTimeout(BrokerError, TimeoutError):
    """The broker did not answer fetches for a partition in time."""


@dataclass
class ReadSpan:
    """Where one read of a partition began and where it stopped: every record of the
    partition from ``start`` up to (not including) ``end`` was read. An ``end`` below
    ``start`` means the partition's log ends before the offset the read was asked to
    start at."""

    start: int = 0
    end: int = 0


class PartitionEnd:
    """Where one read of a partition stops, learnt from the first fetch's high watermark."""

    def __init__(
        self, partition: Any, start: int, hint: int, settings: Settings | None, idle: float
    ) -> None:
        self.partition = partition
        self.trust_end_offsets = settings is None or client_profile(settings).trust_end_offsets
        # A trusted end offset is the end as it stood when the read began (an empty
        # partition then needs no fetch at all); else the first fetch tells it.
        self.target: int | None = hint if self.trust_end_offsets else None
        self.position = start
        self.idle = idle
        self._last_progress = time.monotonic()

    @property
    def reached(self) -> bool:
        return self.target is not None and self.position >= self.target

    def take(self, batch: list[Any]) -> Iterator[Any]:
        """The records of one fetch that lie before the end."""
        for record in batch:
            self.position = record.offset + 1
            if self.target is not None and record.offset >= self.target:
                self.target = record.offset  # reached: nothing after it is read
                return
            yield record

    def after_fetch(
        self, batch_size: int, highwater: int | None, others_moved: bool = False
    ) -> None:
        """Learn the end from the high watermark; LogReadTimeout when fetches stay empty
        (a read of several partitions is not idle while ``others_moved``)."""
        if highwater is not None and self.target is None:  # untrusted end offsets only
            self.target = int(highwater)
        if batch_size or others_moved:
            self._last_progress = time.monotonic()
        elif time.monotonic() - self._last_progress > self.idle:
            raise LogReadTimeout(
                f"no fetch answer for {self.partition.topic}[{self.partition.partition}] "
                f"at offset {self.position} in {self.idle:.0f} s"
            )


def read_to_end(
    consumer: Any,
    partition: Any,
    start: int | None = None,
    settings: Settings | None = None,
    idle_timeout: float = 10.0,
) -> Iterator[Any]:
    """Yield the records of one assigned partition from ``start`` to its current end."""
    with client_errors():
        consumer.assign([partition])
        if start is None:
            consumer.seek_to_beginning(partition)
            start = consumer.position(partition)
        else:
            consumer.seek(partition, start)
        hint = int(consumer.end_offsets([partition])[partition] or 0)
        end = PartitionEnd(partition, start, hint, settings, idle_timeout)
        while not end.reached:
            fetched = consumer.poll(timeout_ms=POLL_MS, max_records=MAX_RECORDS)
            batch = fetched.get(partition, [])
            yield from end.take(batch)
            end.after_fetch(len(batch), consumer.highwater(partition))


async def read_to_end_async(
    consumer: Any,
    partition: Any,
    start: int | None = None,
    settings: Settings | None = None,
    idle_timeout: float = 10.0,
) -> AsyncIterator[Any]:
    """:func:`read_to_end` with an aiokafka consumer."""
    async for batch in read_batches_async(consumer, partition, start, settings, idle_timeout):
        for record in batch:
            yield record


async def read_batches_async(
    consumer: Any,
    partition: Any,
    start: int | None = None,
    settings: Settings | None = None,
    idle_timeout: float = 10.0,
    span: ReadSpan | None = None,
    end_at: int | None = None,
) -> AsyncIterator[list[Any]]:
    """:func:`read_to_end_async` a fetch at a time (none empty): for a reader on another
    thread, one hand-over per batch rather than per record. ``span``, when given, is
    set to where the read began and stopped once it has read to the end. ``end_at``:
    read to there instead, an end the partition is known to have reached (a fetch's high
    watermark seen before), and ask the broker for none."""
    with client_errors():
        consumer.assign([partition])
        consumer.pause(partition)  # no fetch before the end is known (see the module)
        try:
            if start is None:
                await consumer.seek_to_beginning(partition)
                start = await consumer.position(partition)
            else:
                consumer.seek(partition, start)
            if end_at is None:
                hint = int((await consumer.end_offsets([partition]))[partition] or 0)
                end = PartitionEnd(partition, start, hint, settings, idle_timeout)
            else:  # a known end is trusted on every profile
                end = PartitionEnd(partition, start, end_at, None, idle_timeout)
            if not end.reached:
                consumer.resume(partition)
            while not end.reached:
                wait_ms = POLL_MS if end.target is not None else END_POLL_MS
                fetched = await consumer.getmany(
                    partition, timeout_ms=wait_ms, max_records=MAX_RECORDS
                )
                batch = fetched.get(partition, [])
                taken = list(end.take(batch))
                end.after_fetch(len(batch), consumer.highwater(partition))
                if end.reached:  # before anything awaits: the consumer fetches no further
                    consumer.pause(partition)
                if taken:
                    yield taken
            if span is not None:
                assert end.target is not None  # reached
                span.start, span.end = start, end.target
        finally:
            if partition in consumer.assignment():
                consumer.pause(partition)


async def read_partitions_async(
    consumer: Any,
    partitions: Sequence[Any],
    settings: Settings | None = None,
    idle_timeout: float = 10.0,
) -> AsyncIterator[list[Any]]:
    """Batches of the records of ``partitions``, each from its beginning to its current end,
    all fetched at once: each partition's records come in order, partitions interleave."""
    with client_errors():
        consumer.assign(list(partitions))
        consumer.pause(*partitions)  # no fetch before the ends are known (see the module)
        await consumer.seek_to_beginning(*partitions)
        hints = await consumer.end_offsets(list(partitions))
        ends = {}
        for partition in partitions:
            start = await consumer.position(partition)
            ends[partition] = PartitionEnd(
                partition, start, int(hints[partition] or 0), settings, idle_timeout
            )
        reading = [partition for partition in partitions if not ends[partition].reached]
        consumer.resume(*reading)
        # Nothing is yielded before every partition's end is known (on a profile whose end
        # offsets are not trusted, after its first fetch): a record written while the
        # caller works on a first batch must not extend another partition's read.
        early: list[list[Any]] | None = []
        while reading:
            fetched = await consumer.getmany(*reading, timeout_ms=POLL_MS, max_records=MAX_RECORDS)
            taken = []
            for partition in reading:
                records = list(ends[partition].take(fetched.get(partition, [])))
                if records:
                    taken.append(records)
            for partition in reading:  # idle only when no partition gave anything to read
                batch_size = len(fetched.get(partition, []))
                highwater = consumer.highwater(partition)
                ends[partition].after_fetch(batch_size, highwater, others_moved=bool(taken))
            done = [partition for partition in reading if ends[partition].reached]
            if done:
                consumer.pause(*done)  # its end is read: fetch nothing more of it
                reading = [partition for partition in reading if partition not in done]
            if early is not None:
                early += taken
                if any(ends[partition].target is None for partition in reading):
                    continue
                taken, early = early, None
            for records in taken:
                yield records
