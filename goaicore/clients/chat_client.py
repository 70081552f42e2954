"""ChatClient: the sync facade over :class:`~goaicore.clients.aio.AsyncChatClient`.

One listener on the private loop reads the ``replies`` topic for every ask of this
client, so many threads asking at once share one consumer; it is at the end of every
partition before the first request leaves, so no reply can slip past it.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from datetime import datetime

from goaicore.clients.aio.chat_client import SEND_TIMEOUT, AsyncChatClient
from goaicore.records import ChatReply
from goaicore.settings import Settings
from goaicore.store.errors import ReplyTimeout
from goaicore.store.reply_streams import StreamedReply
from goaicore.sync import Blocking, blocking_iter, run_sync

__all__ = ["ChatClient", "ReplyTimeout"]  # ReplyTimeout: where it was raised from before


class ChatClient(Blocking[AsyncChatClient]):
    """Request/reply over Kafka: ``ask`` waits for the reply, ``send`` does not."""

    def __init__(self, settings: Settings | None = None, source: str = "chat-client") -> None:
        super().__init__(AsyncChatClient(settings, source))
        self.settings = self._core.settings
        self.source = source
        self.requests_topic = self._core.requests_topic
        self.replies_topic = self._core.replies_topic

    @property
    def skipped(self) -> int:
        """Records of the replies topic that did not decode (each logged)."""
        return self._core.skipped

    def send(
        self,
        conversation_id: str,
        text: str,
        system: str | None = None,
        tools: Iterable[str] = (),
        model: str | None = None,
        deadline: datetime | None = None,
        request_id: str | None = None,
        timeout: float | None = SEND_TIMEOUT,
    ) -> str:
        """Publish a chat request and return its request id without waiting for the reply.

        ``request_id`` (generated when absent) makes a retry idempotent: the worker
        answers a request id it has answered before with the stored reply. Past
        ``timeout`` seconds without the broker's acknowledgement: NotAcknowledged, with
        the request id to send again (the request may still arrive).
        """
        return run_sync(
            self._core.send(
                conversation_id,
                text,
                system,
                tools,
                model,
                deadline,
                request_id,
                timeout=timeout,
            )
        )

    def ask(
        self,
        conversation_id: str,
        text: str,
        timeout: float = 30.0,
        system: str | None = None,
        tools: Iterable[str] = (),
        model: str | None = None,
        request_id: str | None = None,
        deadline: datetime | None = None,
        *,
        regenerate: bool = False,
    ) -> ChatReply:
        """Send a chat request and wait up to ``timeout`` seconds, sending included, for its
        reply: as
        :meth:`AsyncChatClient.ask <goaicore.clients.aio.AsyncChatClient.ask>` (the same
        ``request_id`` again never runs a second LLM turn; ReplyTimeout carries it)."""
        return run_sync(
            self._core.ask(
                conversation_id,
                text,
                timeout,
                system,
                tools,
                model,
                request_id,
                deadline,
                regenerate=regenerate,
            )
        )

    def ask_stream(
        self,
        conversation_id: str,
        text: str,
        timeout: float = 30.0,
        system: str | None = None,
        tools: Iterable[str] = (),
        model: str | None = None,
        request_id: str | None = None,
        deadline: datetime | None = None,
    ) -> Iterator[StreamedReply]:
        """``ask``, streamed: each text delta and tool call as it happens, then the reply,
        as :meth:`AsyncChatClient.ask_stream
        <goaicore.clients.aio.AsyncChatClient.ask_stream>` (a retried ``request_id``
        joins its running turn's stream)."""
        return blocking_iter(
            self._core.ask_stream(
                conversation_id, text, timeout, system, tools, model, request_id, deadline
            ),
            owner=self,
        )

    def cancel(
        self,
        request_id: str,
        *,
        conversation_id: str | None = None,
        timeout: float | None = SEND_TIMEOUT,
    ) -> None:
        """Stop the turn of ``request_id`` (asked by this client, or in
        ``conversation_id``): it ends, recorded, with the text generated so far
        (NotAcknowledged past ``timeout`` seconds: cancelling again is harmless)."""
        run_sync(self._core.cancel(request_id, conversation_id=conversation_id, timeout=timeout))
