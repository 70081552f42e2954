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
from typing import Any

from goaicore.config import Settings
from goaicore.errors import client_errors
from goaicore.kafka.connection import make_producer
from goaicore.lifecycle import Closing
from goaicore.records import ConversationEvent, UserMessage
from goaicore.records.positions import TopicPosition
from goaicore.records.types import EventBody
from goaicore.records.validation import (
    check_text,
)
from goaicore.store.inputs import event_record, game_event_body
from goaicore.tracing import record_headers


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


def position_of(metadata: Any) -> TopicPosition:
    """Where a record landed, from a producer's record metadata (kafka-python or aiokafka)."""
    return TopicPosition(metadata.topic, metadata.partition, metadata.offset)
