"""Benchmarks of the Kafka clients, on each benchmarked broker.

Each figure is beside its baseline from the same run on the same broker:
kafka-python alone (the same producer settings, the same encoded records; the
same partition read without decoding), so the ratio is the clients' own cost
(validation, Avro, key checks) and catches regressions. Figures on the
embedded broker say nothing about Apache Kafka's.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from goaicore.bench.brokers import broker_settings
from goaicore.bench.registry import Measurement, broker_suite
from goaicore.clients import EventPublisher, HistoryReader
from goaicore.config import Settings
from goaicore.kafka.connection import make_consumer, make_producer
from goaicore.kafka.local import LocalBroker
from goaicore.kafka.partition_reader import read_to_end
from goaicore.kafka.partitioner import partition_for
from goaicore.kafka.topics import ensure_topics
from goaicore.records import ConversationEvent, GameEvent, new_event
from goaicore.records.avro.api import encode_event

RECORDS = 20_000  # published in one batch
SINGLES = 500  # published one call (and one acknowledgement) at a time
HISTORY = 10_000  # events of the one conversation read back
RUNS = 3
BATCH_RUNS = 2
NOTE = "1 process, loopback"
BATCHED_BASE = "kafka-python alone, batched"
SINGLE_BASE = "kafka-python alone, one ack per call"
READ_BASE = "kafka-python alone, the same partition, no decoding"


def _event_of_about(size: int, conversation_id: str, n: int) -> ConversationEvent:
    """A game event whose encoded form is close to ``size`` bytes."""
    base = new_event(conversation_id, GameEvent(kind="tick", text=""), source="bench")
    padding = max(size - len(encode_event(base)), 0)
    text = (f"event {n} " + "x" * padding)[:padding]
    return new_event(conversation_id, GameEvent(kind="tick", text=text), source="bench")


def _raw_batched(settings: Settings, records: list[tuple[bytes, bytes]]) -> float:
    """Seconds for kafka-python alone to send ``records`` and wait once."""
    producer = make_producer(settings)
    try:
        topic = settings.topic("events")
        started = time.perf_counter()
        futures = [producer.send(topic, key=key, value=value) for key, value in records]
        producer.flush(60)
        for future in futures:
            future.get(60)
        return time.perf_counter() - started
    finally:
        producer.close()


def _singles(
    settings: Settings, publisher: EventPublisher, events: list[ConversationEvent]
) -> tuple[float, float]:
    """Seconds to publish ``events`` one acknowledgement at a time: kafka-python alone,
    then ``EventPublisher.publish``, interleaved record by record so both see the
    same broker state. Each raw record is sent, flushed (no linger) and waited for,
    as ``publish`` does.
    """
    producer = make_producer(settings)
    topic = settings.topic("events")
    raw_s = own_s = 0.0
    try:
        for n, event in enumerate([events[0], *events]):  # the first: connect both
            key, value = event.conversation_id.encode(), encode_event(event)
            started = time.perf_counter()
            future = producer.send(topic, key=key, value=value)
            producer.flush(60)
            future.get(60)
            sent = time.perf_counter()
            publisher.publish(event.conversation_id, event)
            if n:
                raw_s += sent - started
                own_s += time.perf_counter() - sent
        return raw_s, own_s
    finally:
        producer.close()


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
    from kafka import TopicPartition

    topic = settings.topic("events")
    partition = TopicPartition(topic, partition_for("long", settings.partitions))
    consumer = make_consumer(settings)
    try:
        raw_s = _best_of(
            RUNS,
            lambda: sum(1 for _ in read_to_end(consumer, partition, settings=settings)),
            HISTORY,
        )
    finally:
        consumer.close()
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
