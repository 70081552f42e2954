"""Benchmarks of the Kafka clients on the embedded broker.

Figures are for the embedded (memory-only) broker on this machine, not for
Apache Kafka; they show the clients' own cost and catch regressions.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from pathlib import Path

from goaicore.avro.api import encode_event
from goaicore.bench.registry import Measurement, suite
from goaicore.broker.embedded import EmbeddedBroker
from goaicore.broker.topics import ensure_topics
from goaicore.clients import EventPublisher, HistoryReader
from goaicore.config import Settings
from goaicore.records import ConversationEvent, GameEvent, new_event

BROKER_NOTE = "embedded broker (memory), 1 process, loopback"


def _event_of_about(size: int, conversation_id: str, n: int) -> ConversationEvent:
    """A game event whose encoded form is close to ``size`` bytes."""
    base = new_event(conversation_id, GameEvent(kind="tick", text=""), source="bench")
    padding = max(size - len(encode_event(base)), 0)
    text = (f"event {n} " + "x" * padding)[:padding]
    return new_event(conversation_id, GameEvent(kind="tick", text=text), source="bench")


@suite("clients")
def clients() -> list[Measurement]:
    rows: list[Measurement] = []
    with EmbeddedBroker() as broker, tempfile.TemporaryDirectory() as tmp:
        settings = Settings(
            env={},
            bootstrap_servers=broker.bootstrap_servers,
            broker_profile="embedded",
            topic_prefix="bench",
            partitions=6,
            data_dir=Path(tmp),
        )
        ensure_topics(settings)
        events = [_event_of_about(300, f"conv-{n % 100}", n) for n in range(20_000)]
        size = statistics.mean(len(encode_event(e)) for e in events[:100])
        with EventPublisher(settings) as publisher:
            started = time.perf_counter()
            publisher.publish_many((e.conversation_id, e) for e in events)
            batch_s = time.perf_counter() - started

            singles = events[:500]
            started = time.perf_counter()
            for event in singles:
                publisher.publish(event.conversation_id, event)
            single_s = time.perf_counter() - started

            one_conversation = [_event_of_about(300, "long", n) for n in range(10_000)]
            publisher.publish_many(("long", e) for e in one_conversation)
        rows.append(
            Measurement(
                "clients",
                "publish throughput, batched",
                len(events) / batch_s,
                "records/s",
                {"records": len(events), "bytes": round(size)},
                BROKER_NOTE,
            )
        )
        rows.append(
            Measurement(
                "clients",
                "publish throughput, one ack per call",
                len(singles) / single_s,
                "records/s",
                {"records": len(singles), "bytes": round(size)},
                BROKER_NOTE,
            )
        )
        with HistoryReader(settings) as reader:
            timings = []
            for _ in range(3):
                started = time.perf_counter()
                count = sum(1 for _ in reader.events("long"))
                timings.append(time.perf_counter() - started)
            assert count == 10_000, count
        rows.append(
            Measurement(
                "clients",
                "read one conversation's history",
                min(timings) * 1000,
                "ms",
                {"events": 10_000, "runs": 3},
                "best of 3; " + BROKER_NOTE,
            )
        )
    return rows
