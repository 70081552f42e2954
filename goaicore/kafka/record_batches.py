"""Records sent to one partition as whole record batches, with aiokafka.

The broker appends a record batch whole or not at all: records that share one reach
the log together, next to each other (no other writer's record lands between them),
and a crash leaves all of them or none. A batch holds what fits the producer's batch
size (``max_batch_size``; a batch always takes its first record), so records that do
not fit one go in several, in order.

The store worker sends with these through its Faust producer
(:class:`~goaicore.kafka.faust.transport.SteadyProducer`), and so does the publisher
(:class:`~goaicore.clients.aio.publisher.AsyncEventPublisher`) for a group of one
conversation's events.
"""

from __future__ import annotations

from collections.abc import Awaitable, Sequence
from dataclasses import dataclass
from typing import Any

from goaicore.records import TopicPosition

Record = tuple[bytes, bytes | None, Sequence[tuple[str, bytes]] | None]
"""A record to send: its key, its value (None: a tombstone) and its headers."""


@dataclass(frozen=True)
class SentBatch:
    """One record batch handed to the producer: its delivery (the batch's record metadata,
    whose offset is its first record's) and how many of the records sent it holds."""

    delivery: Awaitable[Any]
    records: int


async def send_batches(
    producer: Any,
    topic: str,
    partition: int,
    records: Sequence[Record],
    one_at_a_time: bool = False,
) -> list[SentBatch]:
    """Send ``records`` to one partition, in order, in as few record batches as the
    producer's batch size allows; each batch, in order.

    ``one_at_a_time``: a batch leaves only once the broker has the one before it, so a
    failure leaves the records before it on the log and none after it (else batches are
    pipelined: one that fails may leave a gap before one that did not).
    """
    sent: list[SentBatch] = []
    batch = producer.create_batch()
    count = 0
    for key, value, headers in records:
        kept = list(headers or ())
        if batch.append(key=key, value=value, timestamp=None, headers=kept) is None:
            sent.append(await _send(producer, batch, topic, partition, count, one_at_a_time))
            batch, count = producer.create_batch(), 0  # a batch always takes its first record
            batch.append(key=key, value=value, timestamp=None, headers=kept)
        count += 1
    if count:
        sent.append(await _send(producer, batch, topic, partition, count, one_at_a_time))
    return sent


async def _send(
    producer: Any, batch: Any, topic: str, partition: int, count: int, wait: bool
) -> SentBatch:
    delivery = await producer.send_batch(batch, topic, partition=partition)
    if wait:
        await delivery
    return SentBatch(delivery, count)


async def positions(sent: Sequence[SentBatch]) -> list[TopicPosition]:
    """Where each record of ``sent`` landed (its batch's first offset plus its place in
    the batch), once the broker has them all."""
    landed: list[TopicPosition] = []
    for batch in sent:
        metadata = await batch.delivery
        first = metadata.offset
        landed += [
            TopicPosition(metadata.topic, metadata.partition, first + index)
            for index in range(batch.records)
        ]
    return landed
