"""AsyncEventPublisher: game services and applications append events to the log.

The core of both publishers: :class:`~goaicore.clients.EventPublisher` is its sync
facade. The checks and the encoding (:func:`event_record`) are the store's, so every
writer refuses the same input the same way.

Where the workers seal content (``GOAICORE_INTAKE`` on), a publisher holds no key:
it writes to ``intake``, which expires within the erasure window, and the worker
that owns the conversation seals each event into ``events`` (its key's one
writer). The position returned is then the event's place in ``intake``.

``publish_together`` sends a group of one conversation's events as one record batch
(several, in order, past the record limit): the broker appends a batch whole.

A publish waits for its acknowledgement at most ``timeout`` seconds: past it (the broker
down or restarting) it raises :class:`~goaicore.store.errors.NotAcknowledged` with the
envelopes sent, which the producer keeps retrying and may still append once the
broker is back, so publishing those same envelopes again is the safe retry.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping
from typing import Any, Self

from goaicore.errors import client_errors
from goaicore.kafka.aio_connection import require_topic, start_producer
from goaicore.kafka.partitioner import partition_for_key
from goaicore.kafka.record_batches import positions, send_batches
from goaicore.lifecycle import AsyncRunning
from goaicore.records import (
    EVENT_BODY_TYPES,
    ConversationEvent,
    TopicPosition,
    UserMessage,
    new_event,
)
from goaicore.records.types import EventBody
from goaicore.records.validation import check_conversation_id, check_text
from goaicore.settings import Settings
from goaicore.store.errors import not_acknowledged
from goaicore.store.inputs import event_record, game_event_body
from goaicore.tracing import record_headers

PUBLISH_TIMEOUT = 30.0
"""Seconds a publish waits for the broker's acknowledgement by default."""

Prepared = tuple[str, ConversationEvent, bytes, bytes]
"""An event ready to send: its conversation id, its envelope, its record's key and value."""


class AsyncEventPublisher(AsyncRunning):
    """Publish conversation events, keyed by conversation id, to the ``events`` topic
    (``intake`` where the workers seal): ``async with`` it, then await.

    Each call checks its input and encodes before sending, so a bad event raises
    ``InvalidInputError`` and nothing is sent. ``publish`` returns once the broker
    has acknowledged (acks=all); the batch form sends everything first and waits once.
    """

    def __init__(self, settings: Settings | None = None, source: str = "publisher") -> None:
        self.settings = settings or Settings()
        self.source = source
        self.topic = publish_topic(self.settings)
        self._producer: Any = None

    async def start(self) -> Self:
        if self._producer is None:
            # A record batch can hold a group of events up to the record limit (with the
            # max request size's headroom left for its framing and compression).
            batch_size = self.settings.max_record_bytes
            producer = await start_producer(self.settings, max_batch_size=batch_size)
            try:
                await require_topic(producer, self.topic)
            except BaseException:
                await producer.stop()
                raise
            self._producer = producer
        return self

    async def publish(
        self,
        conversation_id: str,
        event: ConversationEvent | EventBody,
        timeout: float = PUBLISH_TIMEOUT,  # noqa: ASYNC109 - EventPublisher.publish's shape
    ) -> TopicPosition:
        """Append one event (a full envelope, or a body to wrap) and return its position
        (NotAcknowledged past ``timeout`` seconds)."""
        return (await self.publish_many([(conversation_id, event)], timeout))[0]

    async def game_event(
        self,
        conversation_id: str,
        text: str,
        kind: str = "game",
        attributes: Mapping[str, str] | None = None,
    ) -> TopicPosition:
        """Append a game event: ``text`` is what the model will see."""
        return await self.publish(conversation_id, game_event_body(text, kind, attributes))

    async def user_message(self, conversation_id: str, text: str) -> TopicPosition:
        """Append a user message without asking for a reply."""
        return await self.publish(conversation_id, UserMessage(text=check_text("text", text)))

    async def publish_many(
        self,
        items: Iterable[tuple[str, ConversationEvent | EventBody]],
        timeout: float = PUBLISH_TIMEOUT,  # noqa: ASYNC109 - as in publish()
    ) -> list[TopicPosition]:
        """Append many events; all are checked and encoded before the first is sent."""
        return await self.publish_prepared([self.prepare(c, e) for c, e in items], timeout)

    async def publish_together(
        self,
        conversation_id: str,
        events: Iterable[ConversationEvent | EventBody],
        timeout: float = PUBLISH_TIMEOUT,  # noqa: ASYNC109 - as in publish()
    ) -> list[TopicPosition]:
        """Append events of one conversation together, in order, and return their positions.

        All are checked and encoded before any is sent. They go in one record batch
        where they fit the record limit together: the broker appends it whole or not at
        all, so no other writer's record lands between them and a crash leaves all or
        none. More go in consecutive batches, each whole, each sent once the broker has
        the one before it: a failure raises, with the batches before it on the log and
        none after it (publishing the same envelopes again completes the group: the
        fold applies an event id once; NotAcknowledged, past ``timeout`` seconds, holds them).
        """
        prepared = [self.prepare(conversation_id, event) for event in events]
        if not prepared:
            return []
        producer = self._started()
        key = conversation_id.encode()
        headers = record_headers()

        async def sent() -> list[TopicPosition]:
            with client_errors():
                count = len(await producer.partitions_for(self.topic))
                partition = partition_for_key(key, count)
                records = [(key, value, headers) for _, _, _, value in prepared]
                batches = await send_batches(
                    producer, self.topic, partition, records, one_at_a_time=True
                )
                return await positions(batches)

        try:
            return await asyncio.wait_for(sent(), timeout)
        except TimeoutError:
            raise not_acknowledged(timeout, [(c, e) for c, e, _, _ in prepared]) from None

    def record(
        self, conversation_id: str, event: ConversationEvent | EventBody
    ) -> tuple[bytes, bytes]:
        """The key and value of one event, checked and encoded (InvalidInputError if bad)."""
        return event_record(self.settings, self.source, conversation_id, event)

    def prepare(self, conversation_id: str, event: ConversationEvent | EventBody) -> Prepared:
        """One event wrapped in its envelope (a body gets a new event id here), checked and
        encoded: the envelope is what a caller publishes again after NotAcknowledged."""
        check_conversation_id(conversation_id)
        if isinstance(event, EVENT_BODY_TYPES):
            event = new_event(conversation_id, event, source=self.source)
        key, value = self.record(conversation_id, event)
        assert isinstance(event, ConversationEvent)  # a body was wrapped; else refused
        return conversation_id, event, key, value

    async def publish_prepared(
        self,
        prepared: list[Prepared],
        timeout: float | None = PUBLISH_TIMEOUT,  # noqa: ASYNC109 - as in publish()
    ) -> list[TopicPosition]:
        """Append events made by :meth:`prepare` and return their positions; past
        ``timeout`` seconds (None: no bound), NotAcknowledged with their envelopes."""
        producer = self._started()
        headers = record_headers()

        async def sent() -> list[TopicPosition]:
            with client_errors():
                deliveries = [
                    await producer.send(self.topic, key=k, value=v, headers=headers)
                    for _, _, k, v in prepared
                ]
                return [position_of(await delivery) for delivery in deliveries]

        try:
            return await asyncio.wait_for(sent(), timeout)
        except TimeoutError:
            raise not_acknowledged(timeout, [(c, e) for c, e, _, _ in prepared]) from None

    async def send(
        self, conversation_id: str, event: ConversationEvent | EventBody
    ) -> asyncio.Future[TopicPosition]:
        """Queue one event without waiting for the broker: the future gives its position
        once acknowledged (:meth:`flush` sends every queued event at once)."""
        return await self.queue(self.prepare(conversation_id, event))

    async def queue(
        self,
        prepared: Prepared,
        timeout: float = PUBLISH_TIMEOUT,  # noqa: ASYNC109 - as in publish()
    ) -> asyncio.Future[TopicPosition]:
        """:meth:`send` for an event made by :meth:`prepare`: NotAcknowledged (holding
        it) when the producer has no room for it within ``timeout`` seconds."""
        conversation_id, event, key, value = prepared
        try:
            with client_errors():
                delivery = await asyncio.wait_for(
                    self._started().send(
                        self.topic, key=key, value=value, headers=record_headers()
                    ),
                    timeout,
                )
        except TimeoutError:
            raise not_acknowledged(timeout, [(conversation_id, event)]) from None
        return asyncio.ensure_future(_position(delivery))

    async def flush(self) -> None:
        """Send every queued event now."""
        with client_errors():
            await self._started().flush()

    async def close(self) -> None:
        producer, self._producer = self._producer, None
        if producer is not None:
            await producer.stop()

    def _started(self) -> Any:
        if self._producer is None:
            raise RuntimeError("use `async with AsyncEventPublisher(...)`, or await start() first")
        return self._producer


async def _position(delivery: Any) -> TopicPosition:
    with client_errors():
        return position_of(await delivery)


def publish_topic(settings: Settings) -> str:
    """Where publishers write: ``intake`` when the workers seal what they take in."""
    return settings.topic("intake" if settings.intake else "events")


def position_of(metadata: Any) -> TopicPosition:
    """Where a record landed, from a producer's record metadata (kafka-python or aiokafka)."""
    return TopicPosition(metadata.topic, metadata.partition, metadata.offset)
