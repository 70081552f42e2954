"""This test process's global tracer provider, recording into memory (set once: OpenTelemetry
allows one global provider per process), and the trace context records carry."""

from __future__ import annotations

import random
import time
from functools import cache

from kafka import KafkaConsumer, TopicPartition
from kafka.consumer.fetcher import ConsumerRecord
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from goaicore.config import Settings
from goaicore.kafka.partitioner import partition_for
from goaicore.tracing import context_of


@cache
def recorded_spans() -> InMemorySpanExporter:
    """The exporter every span of this process ends in, from the first call on."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    trace.set_tracer_provider(provider)
    return exporter


def records_of(settings: Settings, topic: str, conversation: str) -> list[ConsumerRecord]:
    """Every record of ``conversation`` in ``topic`` now, read to the partition's end."""
    consumer = KafkaConsumer(bootstrap_servers=settings.require_bootstrap())
    partition = TopicPartition(topic, partition_for(conversation, settings.partitions))
    consumer.assign([partition])
    consumer.seek_to_beginning(partition)
    end = consumer.end_offsets([partition])[partition]
    found: list[ConsumerRecord] = []
    deadline = time.monotonic() + 30
    while consumer.position(partition) < end:
        assert time.monotonic() < deadline, f"{topic} not read to offset {end}"
        for records in consumer.poll(timeout_ms=1000).values():
            found += [r for r in records if r.key == conversation.encode()]
    consumer.close()
    return found


def records_when(
    settings: Settings, topic: str, conversation: str, count: int
) -> list[ConsumerRecord]:
    """The records of ``conversation`` in ``topic`` once there are at least ``count``."""
    deadline = time.monotonic() + 30
    while len(found := records_of(settings, topic, conversation)) < count:
        assert time.monotonic() < deadline, f"{len(found)} of {count} records in {topic}"
        time.sleep(0.2)
    return found


def trace_of(record: ConsumerRecord) -> str | None:
    """The trace id a record's traceparent carries (None: no valid one)."""
    span_context = trace.get_current_span(context_of(record.headers)).get_span_context()
    return format(span_context.trace_id, "032x") if span_context.is_valid else None


def new_traceparent() -> tuple[str, str]:
    """A caller's new W3C traceparent, and its trace id."""
    trace_id = format(random.getrandbits(128) | 1, "032x")
    return f"00-{trace_id}-{random.getrandbits(64) | 1:016x}-01", trace_id
