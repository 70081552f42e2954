"""EventPublisher: the sync facade over :class:`~goaicore.clients.aio.AsyncEventPublisher`.

Game services and applications append events to the log with it; every check and
the encoding are the asyncio publisher's (see its module for where events go).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
from collections.abc import Coroutine, Iterable, Mapping
from typing import Any, TypeVar

from goaicore.clients.aio.publisher import PUBLISH_TIMEOUT, AsyncEventPublisher
from goaicore.records import ConversationEvent, TopicPosition, UserMessage
from goaicore.records.types import EventBody
from goaicore.records.validation import check_text
from goaicore.settings import Settings
from goaicore.store.errors import not_acknowledged
from goaicore.store.inputs import game_event_body
from goaicore.sync import Blocking, run_sync

T = TypeVar("T")


class EventPublisher(Blocking[AsyncEventPublisher]):
    """Publish conversation events, keyed by conversation id, to the ``events`` topic.

    Each call checks its input and encodes before sending, so a bad event raises
    :class:`InvalidInputError` and nothing reaches the log. ``publish`` waits for
    the broker's acknowledgement and returns the log position; the batch form
    sends everything first and waits once. With ``GOAICORE_INTAKE`` on, the topic is
    ``intake``. Past ``timeout`` seconds without the acknowledgement it raises
    :class:`~goaicore.store.errors.NotAcknowledged`: the events may still be appended,
    so publish its ``events`` (the same envelopes) again to retry.
    """

    def __init__(self, settings: Settings | None = None, source: str = "publisher") -> None:
        super().__init__(AsyncEventPublisher(settings, source))
        self.settings = self._core.settings
        self.source = source
        self.topic = self._core.topic

    def publish(
        self,
        conversation_id: str,
        event: ConversationEvent | EventBody,
        timeout: float = PUBLISH_TIMEOUT,
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
        timeout: float = PUBLISH_TIMEOUT,
    ) -> list[TopicPosition]:
        """Append many events; all are checked and encoded before the first is sent."""
        # Encoded here, in the caller's thread: the private loop stays free for the
        # acknowledgements, heartbeats and replies of every client sharing it.
        prepared = [self._core.prepare(conversation_id, event) for conversation_id, event in items]
        return run_sync(self._core.publish_prepared(prepared, timeout))

    def send(
        self,
        conversation_id: str,
        event: ConversationEvent | EventBody,
        timeout: float = PUBLISH_TIMEOUT,
    ) -> Delivery:
        """Queue one event without waiting; its :class:`Delivery` gives the position once
        acknowledged (see :meth:`flush`). NotAcknowledged when the producer has no room
        for it within ``timeout`` seconds."""
        prepared = self._core.prepare(conversation_id, event)
        queued = run_sync(self._core.queue(prepared, timeout))
        future = asyncio.run_coroutine_threadsafe(_awaited(queued), queued.get_loop())
        return Delivery(future, (conversation_id, prepared[1]))

    def flush(self, timeout: float | None = None) -> None:
        """Send every queued event now, waiting up to ``timeout`` seconds (NotAcknowledged
        past it: the queued events may still be appended)."""
        _within(self._core.flush(), timeout)


class Delivery:
    """An event on its way to the broker: ``get()`` waits for its position."""

    __slots__ = ("_event", "_future")

    def __init__(
        self,
        future: concurrent.futures.Future[TopicPosition],
        event: tuple[str, ConversationEvent],
    ) -> None:
        self._future = future
        self._event = event

    def get(self, timeout: float | None = None) -> TopicPosition:
        """Its position once acknowledged; NotAcknowledged (holding the event, which may
        still be appended) when not within ``timeout`` seconds (None: wait as long as the
        producer retries)."""
        try:
            return self._future.result(timeout)
        except concurrent.futures.TimeoutError:
            raise not_acknowledged(timeout, [self._event]) from None

    def done(self) -> bool:
        return self._future.done()


async def _awaited(future: asyncio.Future[T]) -> T:
    return await future


def _within(call: Coroutine[Any, Any, T], timeout: float | None) -> T:
    """Run ``call`` on the private loop; NotAcknowledged when it takes over ``timeout`` s."""

    async def bounded() -> T:
        try:
            return await asyncio.wait_for(call, timeout)
        except TimeoutError:
            raise not_acknowledged(timeout) from None

    return run_sync(bounded())
