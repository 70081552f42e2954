"""The dead-letter topic: records we could not use, kept with the reason.

A dead letter keeps the original key and value byte for byte, and says in
its headers why it was set aside and where it came from (topic, partition,
offset), so it can be inspected or replayed and nothing is lost.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from goaicore.clients.connection import make_producer
from goaicore.config import Settings

HEADER_PREFIX = "goaicore.dead-letter."
MESSAGE_LIMIT = 2000  # characters of the reason's detail kept in a header


@dataclass(frozen=True)
class DeadLetter:
    """A record set aside, why, and where it came from."""

    reason: str
    message: str
    topic: str
    partition: int
    offset: int
    consumer: str
    key: bytes | None
    value: bytes | None

    def headers(self) -> list[tuple[str, bytes]]:
        fields = {
            "reason": self.reason,
            "message": self.message,
            "topic": self.topic,
            "partition": str(self.partition),
            "offset": str(self.offset),
            "consumer": self.consumer,
        }
        return [(HEADER_PREFIX + name, value.encode()) for name, value in fields.items()]

    @classmethod
    def of(cls, record: Any, reason: str, message: str, consumer: str) -> DeadLetter:
        """The dead letter for a consumed ``record`` (kafka-python's or Faust's)."""
        return cls(
            reason=reason,
            message=message[:MESSAGE_LIMIT],
            topic=record.topic,
            partition=record.partition,
            offset=record.offset,
            consumer=consumer,
            key=record.key,
            value=record.value,
        )

    @classmethod
    def from_record(cls, record: Any) -> DeadLetter:
        """Read a dead letter back from a record of the dead-letter topic."""
        headers = {
            name[len(HEADER_PREFIX) :]: value.decode(errors="replace")
            for name, value in (record.headers or [])
            if name.startswith(HEADER_PREFIX)
        }
        return cls(
            reason=headers.get("reason", "unknown"),
            message=headers.get("message", ""),
            topic=headers.get("topic", ""),
            partition=int(headers.get("partition", "-1")),
            offset=int(headers.get("offset", "-1")),
            consumer=headers.get("consumer", ""),
            key=record.key,
            value=record.value,
        )


class DeadLetterWriter:
    """Forward undecodable records to ``<prefix>.dead-letters`` and wait for the ack."""

    def __init__(self, settings: Settings, consumer_name: str, producer: Any = None) -> None:
        self.topic = settings.topic("dead-letters")
        self.consumer_name = consumer_name
        self._own_producer = producer is None
        self._producer = producer or make_producer(settings)

    def forward(self, record: Any, reason: str, message: str) -> DeadLetter:
        letter = DeadLetter.of(record, reason, message, self.consumer_name)
        self._producer.send(
            self.topic, key=record.key, value=record.value, headers=letter.headers()
        ).get(timeout=30)
        return letter

    def close(self) -> None:
        if self._own_producer:
            self._producer.close()
