"""Reading several partitions at once to their ends (what verify reads the log with)."""

from __future__ import annotations

import asyncio
from collections import defaultdict
from types import SimpleNamespace
from typing import Any

import pytest
from aiokafka import TopicPartition  # type: ignore[import-untyped]

from goaicore.config import Settings
from goaicore.kafka import ensure_topics
from goaicore.kafka.aio_connection import start_consumer, start_producer
from goaicore.kafka.partition_reader import LogReadTimeout, read_partitions_async


async def _read_while_writing(settings: Settings) -> tuple[dict[int, list[int]], int]:
    """Records in partitions 0 and 2 (1 left empty); a record written after the
    first batch is read must not be."""
    topic = settings.topic("events")
    producer = await start_producer(settings)
    consumer = await start_consumer(settings)
    try:
        for n in range(300):
            partition = 0 if n % 3 else 2
            await producer.send(topic, f"{n}".encode(), key=b"k", partition=partition)
        await producer.flush()
        partitions = [TopicPartition(topic, p) for p in range(settings.partitions)]
        seen: dict[int, list[int]] = defaultdict(list)
        batches = 0
        async for batch in read_partitions_async(consumer, partitions, settings):
            if batches == 0:
                late = await producer.send_and_wait(topic, b"late", key=b"k", partition=0)
            batches += 1
            for record in batch:
                assert record.value != b"late"
                seen[record.partition].append(record.offset)
        assert late.offset == 200  # written, past the end the read took
        return dict(seen), batches
    finally:
        await consumer.stop()
        await producer.stop()


def test_every_partition_is_read_once_in_order_to_the_end_it_had_when_the_read_began(
    settings: Settings,
) -> None:
    ensure_topics(settings)
    seen, batches = asyncio.run(_read_while_writing(settings))
    assert seen == {0: list(range(200)), 2: list(range(100))}
    assert batches >= 2  # two partitions: at least a batch each


async def _read_empty(settings: Settings) -> int:
    consumer = await start_consumer(settings)
    try:
        partitions = [
            TopicPartition(settings.topic("events"), p) for p in range(settings.partitions)
        ]
        return sum([len(batch) async for batch in read_partitions_async(consumer, partitions)])
    finally:
        await consumer.stop()


def test_empty_partitions_end_the_read_at_once(settings: Settings) -> None:
    ensure_topics(settings)
    assert asyncio.run(asyncio.wait_for(_read_empty(settings), 30)) == 0


class _OnePartitionSilent:
    """A consumer whose partition 0 is read to its end at once and then keeps growing,
    and whose partition 1 never answers a fetch (its leader is gone)."""

    def __init__(self) -> None:
        self.offset = 0
        self.paused: set[int] = set()

    def assign(self, partitions: list[Any]) -> None:
        self.partitions = partitions

    async def seek_to_beginning(self, *partitions: Any) -> None:
        return None

    async def end_offsets(self, partitions: list[Any]) -> dict[Any, int]:
        return {partition: 0 for partition in partitions}  # too low: not trusted here

    async def position(self, partition: Any) -> int:
        return 0

    async def getmany(self, *partitions: Any, timeout_ms: int, max_records: int) -> dict[Any, Any]:
        await asyncio.sleep(0.01)
        first = self.partitions[0]
        if first not in partitions or first.partition in self.paused:
            return {}
        record = SimpleNamespace(offset=self.offset, partition=0, value=b"v")
        self.offset += 1
        return {first: [record]}

    def highwater(self, partition: Any) -> int | None:
        return 1 if partition.partition == 0 else None  # the first read its end at once

    def pause(self, *partitions: Any) -> None:
        self.paused.update(p.partition for p in partitions)

    def resume(self, *partitions: Any) -> None:
        self.paused.difference_update(p.partition for p in partitions)


async def _read_with_one_silent(settings: Settings) -> list[Any]:
    partitions = [TopicPartition("t", 0), TopicPartition("t", 1)]
    consumer = _OnePartitionSilent()
    return [r async for r in read_partitions_async(consumer, partitions, settings, 0.3)]


def test_a_silent_partition_times_out_by_name_while_another_keeps_growing() -> None:
    settings = Settings(env={}, bootstrap_servers="localhost:1", broker_profile="embedded")
    with pytest.raises(LogReadTimeout, match=r"t\[1\] at offset 0"):
        asyncio.run(asyncio.wait_for(_read_with_one_silent(settings), 10))
