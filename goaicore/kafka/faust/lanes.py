"""Batch lanes: a topic whose records reach one handler a fetch at a time.

faust-streaming (0.15) hands every record to its streams one at a time: the
fetcher decodes it, waits on flow control and the producer buffer, queues it for
each subscribed channel, and the stream then tracks, yields and acks it. Measured on
2 cores, that is about 300 µs of CPU a record before any work is done, and with
``take_events`` a batch closes on a timer, so an idle worker holds a lone event for
the whole window.

A lane skips the per-record path for one topic: the records a fetch returned for it
go to the lane's handler in one call (at most ``max_batch`` at a time, partition by
partition), as soon as the fetch returns, as the consumer client read them (aiokafka's
records: topic, partition, offset, key, value, headers), with no Faust message made
for each. Offsets stay Faust's: a batch is tracked before the handler runs and each of
its records' offsets is acked after it returns, with Faust's bookkeeping of an ack,
so commits, the wait for acks on revocation and the seek back to committed offsets
after a rebalance work as for streams.

A handler may also defer its acks: it returns a future, and the batch is acked when
that future is done (never, if it fails or is cancelled: the records are read again).
Such a lane names the :class:`DeferredWrites` the futures wait on: the lane asks them
to write at once when its fetch reached the end of every partition it read (no
backlog: nothing waits for a later batch) or a rebalance began, and the consumer
drains them before it waits for acks on revocation or at shutdown, so that wait
ends. A batch fetched while flow is suspended (a rebalance) is dropped unacked,
as Faust drops records then, and read again from the committed offsets.

A batch is tracked as one pending message (:class:`LaneBatch`: the consumer's wait
for acks waits for it), its records counted by the sensors a partition at a time
where they take counts (``on_messages_in``; one call per record, with a Faust message
made for it, for any other), and acked under one take of Faust's ack lock. Measured
on the store worker folding 10,000 conversations of 10 events (Apache Kafka, 2
cores), Faust's message, tracking, sensors and ack for each record had been a fifth
of its time.

The topic is subscribed through the app's conductor (so its records are fetched and
acks are enabled for it); no stream reads it. Lanes need goaicore's transports
(``goaicore.kafka.faust.transport``), whose consumer runs them.
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any, Protocol

from faust.types.tuples import ack_lock
from mode.utils.futures import notify

BatchHandler = Callable[[Sequence[Any]], Awaitable[asyncio.Future[None] | None]]
"""A lane's handler: None acks the batch on return, a future once it is done."""


class DeferredWrites(Protocol):
    """What a deferring handler's futures wait on (a ``WriteCache``)."""

    async def write(self) -> None:
        """Send what is waiting now."""

    async def drain(self) -> None:
        """Send what is waiting and return once every future handed out is done."""


# Records a lane's handler may leave queued in Faust's producer buffer (dead letters:
# the tables write their changelogs themselves) before the lane waits for them to
# drain (Faust's streams wait beyond 100).
PRODUCER_BACKLOG = 4000


@dataclass(frozen=True)
class BatchLane:
    """Where a lane's records go: ``handler`` with batches of at most ``max_batch``."""

    handler: BatchHandler
    max_batch: int
    writes: DeferredWrites | None = None


def add_batch_lane(
    app: Any,
    topic: Any,
    handler: BatchHandler,
    max_batch: int,
    writes: DeferredWrites | None = None,
) -> None:
    """Deliver ``topic``'s records to ``handler`` in batches instead of to streams;
    ``writes``: what the handler's futures wait on, if it defers its acks."""
    if max_batch < 1:
        raise ValueError(f"max_batch must be at least 1, got {max_batch}")
    app.topics.add(topic)
    lanes_of(app)[topic.get_topic_name()] = BatchLane(handler, max_batch, writes)


_LANES: weakref.WeakKeyDictionary[Any, dict[str, BatchLane]] = weakref.WeakKeyDictionary()


def lanes_of(app: Any) -> dict[str, BatchLane]:
    """The app's lanes by topic name (none until one is added)."""
    return _LANES.setdefault(app, {})


class LaneBatch:
    """One batch of a lane: its records, and each partition's offsets among them.

    Pending its ack in the consumer as a Faust message would be (the consumer's wait
    for acks, on revocation and at shutdown, waits for every batch tracked): it has a
    message's ``acked`` and ``refcount``, and is held by whatever its ack waits for.
    """

    __slots__ = ("__weakref__", "acked", "offsets", "records", "refcount")

    def __init__(self) -> None:
        self.records: list[Any] = []
        self.offsets: dict[Any, list[int]] = {}
        self.acked = False
        self.refcount = 1

    def add(self, tp: Any, records: Sequence[Any]) -> None:
        """``records`` of the partition ``tp``, in offset order."""
        self.records.extend(records)
        self.offsets.setdefault(tp, []).extend(record.offset for record in records)

    def __len__(self) -> int:
        return len(self.records)


async def run_lane(
    consumer: Any,
    lane: BatchLane,
    batch: LaneBatch,
    generation: int,
    fetched_to: Mapping[Any, int] | None = None,
) -> None:
    """Hand ``batch`` to its lane with Faust's offset bookkeeping around it.

    ``fetched_to``: for the last batch of a fetch, the next offset it read to in each
    partition it read (None for a batch the same fetch has more after).
    """
    if not consumer.flow_active or consumer.app.consumer_generation_id != generation:
        return  # a rebalance began: these are read again from the committed offsets
    if not batch:  # a fetch whose last batch was full: only its end is left to see to
        if lane.writes is not None and caught_up(consumer, fetched_to or {}):
            await lane.writes.write()
        return
    track_batch(consumer, batch)
    written = await lane.handler(batch.records)
    if written is None:
        ack_batch(consumer, batch)
    else:
        written.add_done_callback(partial(_ack_written, consumer, batch))
        if lane.writes is not None and (
            not consumer.flow_active or (fetched_to is not None and caught_up(consumer, fetched_to))
        ):
            await lane.writes.write()
    buffer = consumer.app.producer.buffer
    if buffer.size > PRODUCER_BACKLOG:
        await buffer.flush_atmost(buffer.size - PRODUCER_BACKLOG)


def caught_up(consumer: Any, fetched_to: Mapping[Any, int]) -> bool:
    """Whether a fetch read every partition it returned to its end as the consumer
    knows it (its highwater); unknown counts as the end."""
    for tp, offset in fetched_to.items():
        try:
            highwater = consumer.highwater(tp)
        except AssertionError:  # aiokafka's: no longer assigned (a rebalance began)
            return True
        if highwater is not None and offset < highwater:
            return False
    return True


def track_batch(consumer: Any, batch: LaneBatch) -> None:
    """What ``consumer.track_message`` does for each record: the batch pending its ack,
    and the sensors told of its records, a partition at a time where they take a count."""
    consumer._unacked_messages.add(batch)
    sensors = list(consumer.app.sensors)
    if all(hasattr(sensor, "on_messages_in") for sensor in sensors):
        for tp, offsets in batch.offsets.items():
            for sensor in sensors:
                sensor.on_messages_in(tp, len(offsets), offsets[-1])
        return
    by_offset = {(record.partition, record.offset): record for record in batch.records}
    for tp, offsets in batch.offsets.items():
        for offset in offsets:
            message = consumer._to_message(tp, by_offset[(tp.partition, offset)])
            consumer._on_message_in(tp, offset, message)


def ack_batch(consumer: Any, batch: LaneBatch) -> None:
    """``consumer.ack`` of each record of ``batch``, under one take of Faust's ack lock:
    the same bookkeeping (each offset acked once, at or past the committed offset, and
    counted towards ``broker_commit_every``), and the waiters for acks woken once."""
    with ack_lock:
        try:
            if batch.acked:
                return
            batch.acked = True
            consumer._unacked_messages.discard(batch)
            if not batch.offsets:
                return
            if not consumer.app.topics.acks_enabled_for(next(iter(batch.offsets)).topic):
                return
            for tp, offsets in batch.offsets.items():
                floor = consumer._committed_offset[tp]
                index = consumer._acked_index[tp]
                new = [o for o in dict.fromkeys(offsets) if floor is None or o >= floor]
                new = [o for o in new if o not in index]
                index.update(new)
                consumer._acked[tp].extend(new)
                consumer._n_acked += len(new)
        finally:
            notify(consumer._waiting_for_ack)


def _ack_written(consumer: Any, batch: LaneBatch, written: asyncio.Future[None]) -> None:
    """Ack a deferred batch once its writes are on the broker; a failed or cancelled
    write leaves it unacked, to be read again."""
    if written.cancelled() or written.exception() is not None:
        return
    ack_batch(consumer, batch)


async def drain_lanes(app: Any) -> None:
    """Send and deliver what every deferring lane's handler waits on (its batches are
    acked then): before offsets are committed on revocation or at shutdown."""
    for lane in lanes_of(app).values():
        if lane.writes is not None:
            await lane.writes.drain()
