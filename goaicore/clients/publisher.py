"""EventPublisher: game services and applications append events to the log.

The checks and the encoding (:func:`event_record`) are shared with the asyncio
publisher (``goaicore.clients.aio``), so both refuse the same input the same way.

Where the workers seal content (``GOAICORE_INTAKE`` on), a publisher holds no key:
it writes to ``intake``, which expires within the erasure window, and the worker
that owns the conversation seals each event into ``events`` (its key's one
writer). The position returned is then the event's place in ``intake``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from goaicore.config import Settings
from goaicore.errors import client_errors
from goaicore.kafka.connection import make_producer
from goaicore.lifecycle import Closing
from goaicore.records import EVENT_BODY_TYPES, ConversationEvent, GameEvent, UserMessage, new_event
from goaicore.records.avro.api import encode_event
from goaicore.records.avro.errors import EncodeError
from goaicore.records.types import EventBody, LogPosition
from goaicore.records.validation import (
    InvalidInputError,
    check_attributes,
    check_conversation_id,
    check_size,
    check_text,
)
from goaicore.sealing.records import sealed_room
from goaicore.tracing import record_headers


@dataclass(frozen=True, order=True)
class TopicPosition:
    """Where a record landed: its topic, partition and offset."""

    topic: str
    partition: int
    offset: int

    def __str__(self) -> str:
        return f"{self.topic}[{self.partition}]@{self.offset}"

    @property
    def log_position(self) -> LogPosition:
        """The position within the topic, as snapshots record it."""
        return LogPosition(partition=self.partition, offset=self.offset)


class EventPublisher(Closing):
    """Publish conversation events, keyed by conversation id, to the ``events`` topic.

    Each call checks its input and encodes before sending, so a bad event raises
    :class:`InvalidInputError` and nothing reaches the log. ``publish`` waits for
    the broker's acknowledgement and returns the log position; the batch form
    sends everything first and waits once. With ``GOAICORE_INTAKE`` on, the topic is
    ``intake`` (see the module docstring).
    """

    def __init__(self, settings: Settings | None = None, source: str = "publisher") -> None:
        self.settings = settings or Settings()
        self.source = source
        self.topic = publish_topic(self.settings)
        self._producer = make_producer(self.settings)

    def publish(
        self, conversation_id: str, event: ConversationEvent | EventBody, timeout: float = 30.0
    ) -> TopicPosition:
        """Append one event (a full envelope, or a body to wrap) and return its position."""
        return self.publish_many([(conversation_id, event)], timeout)[0]

    def game_event(
        self,
        conversation_id: str,
        text: str,
        kind: str = "game",
        attributes: Mapping[str, str] | None = None,
    ) -> TopicPosition:
        """Append a game event: ``text`` is what the model will see."""
        return self.publish(conversation_id, game_event_body(text, kind, attributes))

    def user_message(self, conversation_id: str, text: str) -> TopicPosition:
        """Append a user message without asking for a reply."""
        return self.publish(conversation_id, UserMessage(text=check_text("text", text)))

    def publish_many(
        self,
        items: Iterable[tuple[str, ConversationEvent | EventBody]],
        timeout: float = 30.0,
    ) -> list[TopicPosition]:
        """Append many events; all are checked and encoded before the first is sent."""
        prepared = [self._record(conversation_id, event) for conversation_id, event in items]
        headers = record_headers()
        with client_errors():
            futures = [
                self._producer.send(self.topic, key=k, value=v, headers=headers)
                for k, v in prepared
            ]
            self._producer.flush(timeout)
            return [position_of(future.get(timeout)) for future in futures]

    def send(self, conversation_id: str, event: ConversationEvent | EventBody) -> Any:
        """Send without waiting; returns the producer's future (see :meth:`flush`)."""
        key, value = self._record(conversation_id, event)
        with client_errors():
            return self._producer.send(self.topic, key=key, value=value, headers=record_headers())

    def flush(self, timeout: float | None = None) -> None:
        with client_errors():
            self._producer.flush(timeout)

    def close(self) -> None:
        self._producer.close()

    def _record(
        self, conversation_id: str, event: ConversationEvent | EventBody
    ) -> tuple[bytes, bytes]:
        return event_record(self.settings, self.source, conversation_id, event)


def publish_topic(settings: Settings) -> str:
    """Where publishers write: ``intake`` when the workers seal what they take in."""
    return settings.topic("intake" if settings.intake else "events")


def event_record(
    settings: Settings, source: str, conversation_id: str, event: ConversationEvent | EventBody
) -> tuple[bytes, bytes]:
    """An event record's key and value, checked and encoded; InvalidInputError if bad.

    ``event`` is a whole envelope, or a body to wrap in one from ``source``. Going to
    ``intake``, it must leave room for the seal the worker adds.
    """
    check_conversation_id(conversation_id)
    if isinstance(event, ConversationEvent):
        if event.conversation_id != conversation_id:
            raise InvalidInputError(
                f"event {event.event_id} belongs to conversation "
                f"{event.conversation_id!r}, not {conversation_id!r}"
            )
        envelope = event
    elif isinstance(event, EVENT_BODY_TYPES):
        envelope = new_event(conversation_id, event, source=source)
    else:
        raise InvalidInputError(
            f"expected a ConversationEvent or an event body, got {type(event).__name__}"
        )
    try:
        payload = encode_event(envelope)
    except EncodeError as err:
        raise InvalidInputError(f"event does not fit the schema: {err}") from err
    limit = settings.max_record_bytes - (sealed_room(envelope) if settings.intake else 0)
    return conversation_id.encode(), check_size("event", payload, limit)


def game_event_body(text: str, kind: str, attributes: Mapping[str, str] | None) -> GameEvent:
    """A GameEvent from a caller's arguments, each checked."""
    return GameEvent(
        kind=check_text("kind", kind),
        text=check_text("text", text),
        attributes=check_attributes(attributes),
    )


def position_of(metadata: Any) -> TopicPosition:
    """Where a record landed, from a producer's record metadata (kafka-python or aiokafka)."""
    return TopicPosition(metadata.topic, metadata.partition, metadata.offset)
