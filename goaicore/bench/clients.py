"""Benchmarks of the Kafka clients, on each benchmarked broker.

Each figure is beside its baseline from the same run on the same broker: aiokafka
alone, the client under the sync clients' asyncio cores (the same producer settings,
the same encoded records; the same partition read without decoding), on an event loop
of the calling thread, so the ratio is the clients' own cost (validation, Avro, key
checks, the hand-over to the clients' loop) and catches regressions. Figures on the
embedded broker say nothing about Apache Kafka's.
"""

from __future__ import annotations

import asyncio
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from goaicore.bench.brokers import broker_settings
from goaicore.bench.registry import Measurement, broker_suite
from goaicore.clients import EventPublisher, HistoryReader
from goaicore.kafka.aio_connection import partitions_of, start_consumer, start_producer
from goaicore.kafka.local import LocalBroker
from goaicore.kafka.partition_reader import read_batches_async
from goaicore.kafka.partitioner import partition_for
from goaicore.kafka.topics import ensure_topics
from goaicore.records import ConversationEvent, GameEvent, new_event
from goaicore.records.avro.api import encode_event
from goaicore.settings import Settings

RECORDS = 20_000  # published in one batch
SINGLES = 500  # published one call (and one acknowledgement) at a time
HISTORY = 10_000  # events of the one conversation read back
RUNS = 3
BATCH_RUNS = 2
NOTE = "1 process, loopback"
BATCHED_BASE = "aiokafka alone, batched"
SINGLE_BASE = "aiokafka alone, one ack per call"
READ_BASE = "aiokafka alone, the same partition, no decoding"


def _event_of_about(size: int, conversation_id: str, n: int) -> ConversationEvent:
    """A game event whose encoded form is close to ``size`` bytes."""
    base = new_event(conversation_id, GameEvent(kind="tick", text=""), source="bench")
    padding = max(size - len(encode_event(base)), 0)
    text = (f"event {n} " + "x" * padding)[:padding]
    return new_event(conversation_id, GameEvent(kind="tick", text=text), source="bench")


def _raw_batched(settings: Settings, records: list[tuple[bytes, bytes]]) -> float:
    """Seconds for aiokafka alone to send ``records`` and wait once."""

    async def run() -> float:
        producer = await start_producer(settings)
        try:
            topic = settings.topic("events")
            started = time.perf_counter()
            sent = [await producer.send(topic, key=key, value=value) for key, value in records]
            for delivery in sent:
                await delivery
            return time.perf_counter() - started
        finally:
            await producer.stop()

    return asyncio.run(run())


def _singles(
    settings: Settings, publisher: EventPublisher, events: list[ConversationEvent]
) -> tuple[float, float]:
    """Seconds to publish ``events`` one acknowledgement at a time: aiokafka alone (on a
    loop of this thread), then ``EventPublisher.publish``, interleaved record by record so
    both see the same broker state. Each raw record is sent and waited for, as ``publish``
    does.
    """
    loop = asyncio.new_event_loop()
    producer = loop.run_until_complete(start_producer(settings))
    topic = settings.topic("events")

    async def send(key: bytes, value: bytes) -> None:
        await (await producer.send(topic, key=key, value=value))

    raw_s = own_s = 0.0
    try:
        for n, event in enumerate([events[0], *events]):  # the first: connect both
            key, value = event.conversation_id.encode(), encode_event(event)
            started = time.perf_counter()
            loop.run_until_complete(send(key, value))
            sent = time.perf_counter()
            publisher.publish(event.conversation_id, event)
            if n:
                raw_s += sent - started
                own_s += time.perf_counter() - sent
        return raw_s, own_s
    finally:
        loop.run_until_complete(producer.stop())
        loop.close()


async def _count(consumer: Any, partition: Any, settings: Settings) -> int:
    """How many records aiokafka alone reads from ``partition``, without decoding."""
    count = 0
    async for batch in read_batches_async(consumer, partition, settings=settings):
        count += len(batch)
    return count


def _best_of(runs: int, fn: Callable[[], int], expected: int) -> float:
    """The shortest of ``runs`` timed calls, each checked to have read ``expected`` records."""
    timings = []
    for _ in range(runs):
        started = time.perf_counter()
        count = fn()
        timings.append(time.perf_counter() - started)
        if count < expected:
            raise RuntimeError(f"read {count} records, expected {expected}")
    return min(timings)


@broker_suite("clients")
def clients(broker: LocalBroker) -> list[Measurement]:
    with tempfile.TemporaryDirectory() as tmp:
        settings = broker_settings(broker, "bench", Path(tmp))
        ensure_topics(settings)
        return _measure(settings)


def _measure(settings: Settings) -> list[Measurement]:
    events = [_event_of_about(300, f"conv-{n % 100}", n) for n in range(RECORDS)]
    encoded = [(e.conversation_id.encode(), encode_event(e)) for e in events]
    size = round(statistics.mean(len(value) for _, value in encoded[:100]))
    _raw_batched(settings, encoded[:100])  # the topic's partitions are ready and warm
    with EventPublisher(settings) as publisher:
        publisher.publish_many((e.conversation_id, e) for e in events[:100])
        raw_batch_s = batch_s = float("inf")
        for _ in range(BATCH_RUNS):  # alternated, best of each: the log's growth hits both
            raw_batch_s = min(raw_batch_s, _raw_batched(settings, encoded))
            started = time.perf_counter()
            publisher.publish_many((e.conversation_id, e) for e in events)
            batch_s = min(batch_s, time.perf_counter() - started)

        singles = events[:SINGLES]
        raw_single_s, single_s = _singles(settings, publisher, singles)

        one_conversation = [_event_of_about(300, "long", n) for n in range(HISTORY)]
        publisher.publish_many(("long", e) for e in one_conversation)

    batched = {"records": len(events), "bytes": size, "runs": BATCH_RUNS}
    batch_note = f"best of {BATCH_RUNS}, alternated; {NOTE}"
    one_by_one = {"records": len(singles), "bytes": size}
    single_note = f"interleaved record by record; {NOTE}"
    rows = [
        Measurement(
            "clients",
            "publish throughput, batched",
            len(events) / batch_s,
            "records/s",
            batched,
            batch_note,
            baseline=BATCHED_BASE,
        ),
        Measurement(
            "clients", BATCHED_BASE, len(events) / raw_batch_s, "records/s", batched, batch_note
        ),
        Measurement(
            "clients",
            "publish throughput, one ack per call",
            len(singles) / single_s,
            "records/s",
            one_by_one,
            single_note,
            baseline=SINGLE_BASE,
        ),
        Measurement(
            "clients",
            SINGLE_BASE,
            len(singles) / raw_single_s,
            "records/s",
            one_by_one,
            single_note,
        ),
    ]

    with HistoryReader(settings) as reader:
        history_s = _best_of(RUNS, lambda: sum(1 for _ in reader.events("long")), HISTORY)
    # The baseline's consumer is started once, as the reader measured above was.
    loop = asyncio.new_event_loop()
    consumer = loop.run_until_complete(start_consumer(settings))
    try:
        topic = settings.topic("events")
        partitions = loop.run_until_complete(partitions_of(consumer, topic))
        partition = partitions[partition_for("long", len(partitions))]
        raw_s = _best_of(
            RUNS,
            lambda: loop.run_until_complete(_count(consumer, partition, settings)),
            HISTORY,
        )
    finally:
        loop.run_until_complete(consumer.stop())
        loop.close()
    params = {"events": HISTORY, "runs": RUNS}
    note = f"best of {RUNS}; {NOTE}"
    rows.append(
        Measurement(
            "clients",
            "read one conversation's history",
            history_s * 1000,
            "ms",
            params,
            note,
            baseline=READ_BASE,
        )
    )
    rows.append(Measurement("clients", READ_BASE, raw_s * 1000, "ms", params, note))
    return rows
