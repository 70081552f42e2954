"""Batch lanes: a topic whose records reach one handler a fetch at a time.

faust-streaming (0.15) hands every record to its streams one at a time: the
fetcher decodes it, waits on flow control and the producer buffer, queues it for
each subscribed channel, and the stream then tracks, yields and acks it. Measured on
2 cores, that is about 300 µs of CPU a record before any work is done, and with
``take_events`` a batch closes on a timer, so an idle worker holds a lone event for
the whole window.

A lane skips the per-record path for one topic: the records a fetch returned for it
go to the lane's handler in one call (at most ``max_batch`` at a time, in partition
order), as soon as the fetch returns. Offsets stay Faust's: each record is tracked
before the handler runs and acked after it returns, so commits, the wait for acks
on revocation and the seek back to committed offsets after a rebalance work as for
streams. A batch fetched while flow is suspended (a rebalance) is dropped unacked,
as Faust drops records then, and read again from the committed offsets.

The topic is subscribed through the app's conductor (so its records are fetched and
acks are enabled for it); no stream reads it. Lanes need goaicore's transports
(``goaicore.kafka.faust.transport``), whose consumer runs them.
"""

from __future__ import annotations

import weakref
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

BatchHandler = Callable[[Sequence[Any]], Awaitable[None]]

# Records a lane's handler may leave queued in Faust's producer buffer (dead letters:
# the tables write their changelogs themselves) before the lane waits for them to
# drain (Faust's streams wait beyond 100).
PRODUCER_BACKLOG = 4000


@dataclass(frozen=True)
class BatchLane:
    """Where a lane's records go: ``handler`` with batches of at most ``max_batch``."""

    handler: BatchHandler
    max_batch: int


def add_batch_lane(app: Any, topic: Any, handler: BatchHandler, max_batch: int) -> None:
    """Deliver ``topic``'s records to ``handler`` in batches instead of to streams."""
    if max_batch < 1:
        raise ValueError(f"max_batch must be at least 1, got {max_batch}")
    app.topics.add(topic)
    lanes_of(app)[topic.get_topic_name()] = BatchLane(handler, max_batch)


_LANES: weakref.WeakKeyDictionary[Any, dict[str, BatchLane]] = weakref.WeakKeyDictionary()


def lanes_of(app: Any) -> dict[str, BatchLane]:
    """The app's lanes by topic name (none until one is added)."""
    return _LANES.setdefault(app, {})


async def run_lane(consumer: Any, lane: BatchLane, batch: list[Any], generation: int) -> None:
    """Hand ``batch`` to its lane with Faust's offset bookkeeping around it."""
    if not consumer.flow_active or consumer.app.consumer_generation_id != generation:
        return  # a rebalance began: these are read again from the committed offsets
    for message in batch:
        consumer.track_message(message)
    await lane.handler(batch)
    for message in batch:
        consumer.ack(message)
    buffer = consumer.app.producer.buffer
    if buffer.size > PRODUCER_BACKLOG:
        await buffer.flush_atmost(buffer.size - PRODUCER_BACKLOG)
