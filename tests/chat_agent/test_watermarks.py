"""Read-your-writes asks the broker for a partition's end: exact, and never behind a fetch.

On Apache Kafka the end-offset answer is trusted, and a consumer left unpaused fetched
in the background on the connection that question goes over; the embedded profile's
consumer was always paused between questions.
"""

from __future__ import annotations

import asyncio

from goaicore.clients import EventPublisher
from goaicore.config import Settings
from goaicore.kafka.high_watermarks import HighWatermarks
from goaicore.kafka.topics import ensure_topics
from goaicore.records import GameEvent


def test_the_end_asked_is_each_partitions_next_offset_and_the_consumer_never_fetches(
    settings: Settings,
) -> None:
    ensure_topics(settings)
    ends: dict[int, int] = {}
    with EventPublisher(settings) as publisher:
        for n in range(40):
            position = publisher.publish(f"conv-{n % 7}", GameEvent(kind="tick", text=str(n)))
            ends[position.partition] = position.offset + 1

    async def ask() -> tuple[dict[int, int], set[int]]:
        watermarks = HighWatermarks(settings)
        try:
            asked = {p: await watermarks.get(p) for p in range(settings.partitions)}
            together = await asyncio.gather(*(watermarks.get(p) for p in ends))
            assert list(together) == [asked[p] for p in ends]
            # A fetch waiting on the broker would hold the end-offset question up on
            # the same connection: every partition stays paused.
            consumer = watermarks._consumer
            paused = {tp.partition for tp in consumer.paused()}
            assert {tp.partition for tp in consumer.assignment()} == paused
            return asked, paused
        finally:
            await watermarks.stop()

    asked, paused = asyncio.run(ask())
    assert asked == {p: ends.get(p, 0) for p in range(settings.partitions)}
    assert paused == set(range(settings.partitions))
