"""AsyncChatClient: send chat requests and wait for the matching replies, without
blocking the event loop. The core of both chat clients: :class:`~goaicore.clients.ChatClient`
is its sync facade.

One listener task reads the ``replies`` topic for every ask of this client; it is
positioned at the end of every partition in ``start()``, before any request
leaves, so no reply can slip past it. Replies are matched by request id.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Iterable
from datetime import datetime, timedelta
from typing import Any, Self

from goaicore.errors import BrokerError, client_errors
from goaicore.kafka.aio_connection import (
    partitions_of,
    start_consumer,
    start_producer,
    stop_all,
)
from goaicore.lifecycle import AsyncRunning
from goaicore.records import ChatReply, new_id, utc_now
from goaicore.records.avro.api import decode_chat_reply
from goaicore.records.avro.errors import DecodeError
from goaicore.records.validation import check_request_id
from goaicore.settings import Settings
from goaicore.store.errors import timed_out
from goaicore.store.inputs import chat_request_record
from goaicore.tracing import ask_span, record_headers

log = logging.getLogger(__name__)


class AsyncChatClient(AsyncRunning):
    """Request/reply over Kafka: ``await ask(...)`` waits for the reply, ``send`` does not.

    ``request_id`` makes a retry idempotent (the worker answers a request id it has
    answered before with the stored reply), and ReplyTimeout carries it.
    """

    def __init__(self, settings: Settings | None = None, source: str = "chat-client") -> None:
        self.settings = settings or Settings()
        self.source = source
        self.requests_topic = self.settings.topic("requests")
        self.replies_topic = self.settings.topic("replies")
        self.skipped = 0
        self._producer: Any = None
        self._consumer: Any = None
        self._listener: asyncio.Task[None] | None = None
        self._listener_error: BaseException | None = None
        self._pending: dict[str, asyncio.Future[ChatReply]] = {}
        self._waiters: dict[str, int] = {}

    async def start(self) -> Self:
        if self._listener is not None:
            return self
        try:
            # No linger: each request is sent and waited for alone.
            self._producer = await start_producer(self.settings, linger_ms=0)
            self._consumer = await start_consumer(self.settings)
            partitions = await partitions_of(self._consumer, self.replies_topic)
            self._consumer.assign(partitions)
            with client_errors():
                await self._consumer.seek_to_end(*partitions)
                for partition in partitions:  # resolved now, before any request is sent
                    await self._consumer.position(partition)
        except BaseException:
            await self.close()
            raise
        self._listener = asyncio.create_task(self._listen(), name="goaicore-replies")
        return self

    async def send(
        self,
        conversation_id: str,
        text: str,
        system: str | None = None,
        tools: Iterable[str] = (),
        model: str | None = None,
        deadline: datetime | None = None,
        request_id: str | None = None,
    ) -> str:
        """Publish a chat request and return its request id without waiting for the reply."""
        request, payload = chat_request_record(
            self.settings, conversation_id, text, system, tools, model, deadline, request_id
        )
        producer = self._started()
        with client_errors():
            delivery = await producer.send(
                self.requests_topic,
                key=conversation_id.encode(),
                value=payload,
                headers=record_headers(),
            )
            await delivery
        return request.request_id

    async def ask(
        self,
        conversation_id: str,
        text: str,
        timeout: float = 30.0,  # noqa: ASYNC109 - ChatClient.ask's shape; it also sets the deadline
        system: str | None = None,
        tools: Iterable[str] = (),
        model: str | None = None,
        request_id: str | None = None,
        deadline: datetime | None = None,
    ) -> ChatReply:
        """Send a chat request and wait up to ``timeout`` seconds for its reply.

        Pass the ``request_id`` of an earlier ask (``ReplyTimeout.request_id``, or
        the reply's) to retry it: the worker answers with that request's reply and
        runs no second LLM turn, also after a restart. The reply carries the id.

        The worker gives up on the turn at ``deadline`` (default: when this wait
        ends). A later deadline lets the turn finish after a ReplyTimeout, so that
        asking again with the same id gets its answer.
        """
        request_id = new_id() if request_id is None else check_request_id(request_id)
        with ask_span(conversation_id, request_id):
            return await self._ask(
                conversation_id, text, timeout, system, tools, model, request_id, deadline
            )

    async def _ask(
        self,
        conversation_id: str,
        text: str,
        timeout: float,  # noqa: ASYNC109 - the ask's wait, as in ask()
        system: str | None,
        tools: Iterable[str],
        model: str | None,
        request_id: str,
        deadline: datetime | None,
    ) -> ChatReply:
        self._started()
        if self._listener_error is not None:
            error = self._listener_error
            raise BrokerError(f"the reply listener failed: {error}") from error
        future = self._pending.get(request_id)
        if future is None:
            future = asyncio.get_running_loop().create_future()
            self._pending[request_id] = future
        self._waiters[request_id] = self._waiters.get(request_id, 0) + 1
        try:
            if deadline is None:
                deadline = utc_now() + timedelta(seconds=timeout)
            await self.send(conversation_id, text, system, tools, model, deadline, request_id)
            try:
                return await asyncio.wait_for(asyncio.shield(future), timeout)
            except TimeoutError:
                raise timed_out(request_id, timeout) from None
        finally:
            self._waiters[request_id] -= 1
            if not self._waiters[request_id]:
                del self._waiters[request_id]
                self._pending.pop(request_id, None)

    async def _listen(self) -> None:
        try:
            while True:
                with client_errors():
                    batches = await self._consumer.getmany(timeout_ms=200)
                for records in batches.values():
                    for record in records:
                        self._deliver(record)
        except asyncio.CancelledError:
            raise
        except Exception as err:
            self._listener_error = err
            log.exception("reply listener stopped")
            for future in self._pending.values():
                if not future.done():
                    failed = BrokerError(f"the reply listener failed: {err}")
                    failed.__cause__ = err
                    future.set_exception(failed)

    def _deliver(self, record: Any) -> None:
        reply = reply_of(record)
        if reply is None:
            self.skipped += 1
            return
        future = self._pending.get(reply.request_id)
        if future is not None and not future.done():
            future.set_result(reply)

    def _started(self) -> Any:
        if self._producer is None or self._listener is None:
            raise RuntimeError("use `async with AsyncChatClient(...)`, or await start() first")
        return self._producer

    async def close(self) -> None:
        listener, self._listener = self._listener, None
        if listener is not None:
            listener.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await listener
        clients, self._consumer, self._producer = (self._consumer, self._producer), None, None
        await stop_all(*clients)


def reply_of(record: Any) -> ChatReply | None:
    """The reply a record of the replies topic holds; None (logged) when it does not decode."""
    try:
        return decode_chat_reply(record.value)
    except DecodeError as err:
        log.warning(
            "skipped an undecodable reply at %s[%d]@%d: %s",
            record.topic,
            record.partition,
            record.offset,
            err.reason,
        )
        return None
