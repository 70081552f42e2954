"""The dead-letter topic: records we could not use, kept with the reason.

A dead letter keeps the original key and value byte for byte, and says in
its headers why it was set aside and where it came from (topic, partition,
offset), so it can be inspected or replayed and nothing is lost. A record too
large to be sent again with those headers (one at the topic's own limit) keeps
a prefix instead, and its headers say how large it was: its origin still leads
to the whole record in its topic.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from goaicore.errors import client_errors
from goaicore.kafka.connection import make_producer
from goaicore.lifecycle import Closing
from goaicore.settings import Settings

HEADER_PREFIX = "goaicore.dead-letter."
MESSAGE_LIMIT = 2000  # characters of the reason's detail kept in a header
HEADERS_ROOM = 8 * 1024  # bytes a dead letter keeps for its headers under the record limit
KEY_PREFIX = 1024  # bytes of an oversize record's key kept


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
    truncated: str = ""
    """Empty when key and value are whole; else their original sizes and what was kept."""

    def headers(self) -> list[tuple[str, bytes]]:
        fields = {
            "reason": self.reason,
            "message": self.message,
            "topic": self.topic,
            "partition": str(self.partition),
            "offset": str(self.offset),
            "consumer": self.consumer,
        }
        if self.truncated:
            fields["truncated"] = self.truncated
        return [(HEADER_PREFIX + name, value.encode()) for name, value in fields.items()]

    @classmethod
    def of(
        cls, record: Any, reason: str, message: str, consumer: str, limit: int | None = None
    ) -> DeadLetter:
        """The dead letter for a consumed ``record`` (kafka-python's or Faust's).

        With a ``limit`` (the record limit), a key and value that would not fit
        beside the headers are cut to a prefix, and the ``truncated`` header says so.
        """
        key, value = record.key, record.value
        truncated = ""
        size = len(key or b"") + len(value or b"")
        if limit is not None and size > limit - HEADERS_ROOM:
            key = key[:KEY_PREFIX] if key is not None else None
            room = max(limit - HEADERS_ROOM - len(key or b""), 0)
            value = value[:room] if value is not None else None
            truncated = (
                f"key {len(record.key or b'')} bytes, kept {len(key or b'')}; "
                f"value {len(record.value or b'')} bytes, kept {len(value or b'')}"
            )
        return cls(
            reason=reason,
            message=message[:MESSAGE_LIMIT],
            topic=record.topic,
            partition=record.partition,
            offset=record.offset,
            consumer=consumer,
            key=key,
            value=value,
            truncated=truncated,
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
            truncated=headers.get("truncated", ""),
        )


class DeadLetterWriter(Closing):
    """Forward undecodable records to ``<prefix>.dead-letters`` and wait for the ack."""

    def __init__(self, settings: Settings, consumer_name: str, producer: Any = None) -> None:
        self.topic = settings.topic("dead-letters")
        self.limit = settings.max_record_bytes
        self.consumer_name = consumer_name
        self._own_producer = producer is None
        self._producer = producer or make_producer(settings)

    def forward(self, record: Any, reason: str, message: str) -> DeadLetter:
        letter = DeadLetter.of(record, reason, message, self.consumer_name, self.limit)
        with client_errors():
            self._producer.send(
                self.topic, key=letter.key, value=letter.value, headers=letter.headers()
            ).get(timeout=30)
        return letter

    def close(self) -> None:
        if self._own_producer:
            self._producer.close()
