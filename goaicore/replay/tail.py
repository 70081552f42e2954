"""Follow one of goaicore's topics, record by record, each decoded for an auditor.

What ``goaicore tail`` shows: every record with its position and what it holds (a
decoded record, a tombstone, a dead letter, or why it does not decode). Reading never
stops on a bad record and never commits: tailing changes nothing.
"""

from __future__ import annotations

import time
from collections.abc import Generator
from dataclasses import dataclass
from typing import Any

from goaicore.errors import client_errors
from goaicore.kafka.connection import make_consumer, topic_partitions
from goaicore.kafka.dead_letters import DeadLetter
from goaicore.kafka.topics import TOPICS
from goaicore.records.avro.api import decode
from goaicore.records.avro.errors import DecodeError
from goaicore.records.types import Record
from goaicore.settings import Settings

TOPIC_NAMES: tuple[str, ...] = tuple(t.name for t in TOPICS)


@dataclass(frozen=True, slots=True)
class Tailed:
    """One record of a followed topic: where it is and exactly one of what it holds."""

    topic: str
    partition: int
    offset: int
    record: Record | None = None
    tombstone: str | None = None
    """The key of a compacted topic's removed value (a deleted or erased conversation)."""
    dead_letter: DeadLetter | None = None
    undecodable: tuple[str, str] | None = None
    """Why it does not decode: the reason and the message."""


def tail(
    settings: Settings,
    topic: str,
    from_beginning: bool = False,
    idle_timeout: float | None = None,
) -> Generator[Tailed, None, None]:
    """The records of ``topic`` (one of :data:`TOPIC_NAMES`) as they arrive, from its end
    (or its beginning); stops after ``idle_timeout`` seconds without one, else follows."""
    if topic not in TOPIC_NAMES:
        raise ValueError(f"unknown topic {topic!r} (known: {', '.join(TOPIC_NAMES)})")
    consumer = make_consumer(settings)
    try:
        with client_errors():
            assigned = topic_partitions(consumer, settings.topic(topic))
            consumer.assign(assigned)
            if from_beginning:
                consumer.seek_to_beginning(*assigned)
            else:
                consumer.seek_to_end(*assigned)
        last = time.monotonic()
        while True:
            with client_errors():
                batches = consumer.poll(timeout_ms=200)
            for records in batches.values():
                for record in records:
                    last = time.monotonic()
                    yield _tailed(topic, record)
            if idle_timeout is not None and time.monotonic() - last > idle_timeout:
                return
    finally:
        consumer.close()


def _tailed(topic: str, record: Any) -> Tailed:
    where = {"topic": record.topic, "partition": record.partition, "offset": record.offset}
    if topic == "dead-letters":
        return Tailed(**where, dead_letter=DeadLetter.from_record(record))
    if record.value is None and record.key is not None:  # compacted topics: removed, erased
        return Tailed(**where, tombstone=bytes(record.key).decode("utf-8", "replace"))
    try:
        return Tailed(**where, record=decode(record.value))
    except DecodeError as err:
        return Tailed(**where, undecodable=(err.reason, err.message))
