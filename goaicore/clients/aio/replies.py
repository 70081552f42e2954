"""AsyncReplySubscriber: ReplySubscriber for asyncio: ``async for reply in subscriber``."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from typing import Any, Self

from goaicore.errors import client_errors
from goaicore.kafka.aio_connection import start_consumer, start_producer, stop_all
from goaicore.kafka.dead_letters import DeadLetter
from goaicore.lifecycle import AsyncRunning
from goaicore.records import ChatReply
from goaicore.records.avro.api import decode_chat_reply
from goaicore.records.avro.errors import DecodeError
from goaicore.settings import Settings


class AsyncReplySubscriber(AsyncRunning):
    """Chat replies as a member of consumer group ``group_id``, as they come.

    As :class:`~goaicore.clients.ReplySubscriber`: members of a group share the
    partitions; offsets are committed when the next batch is asked for (at least
    once); an undecodable record goes to the dead-letter topic and iteration goes on.
    """

    def __init__(
        self,
        settings: Settings | None = None,
        group_id: str = "replies",
        from_beginning: bool = False,
    ) -> None:
        if not isinstance(group_id, str) or not group_id.strip():
            raise ValueError("group_id must be a non-empty string")
        self.settings = settings or Settings()
        self.group_id = group_id
        self.from_beginning = from_beginning
        self.dead_letters = 0
        self._consumer: Any = None
        self._producer: Any = None

    async def start(self) -> Self:
        if self._consumer is not None:
            return self
        try:
            self._producer = await start_producer(self.settings)
            self._consumer = await start_consumer(
                self.settings,
                self.settings.topic("replies"),
                group_id=self.group_id,
                auto_offset_reset="earliest" if self.from_beginning else "latest",
            )
        except BaseException:
            await self.close()
            raise
        return self

    def __aiter__(self) -> AsyncIterator[ChatReply]:
        return self.replies()

    async def replies(self, idle_timeout: float | None = None) -> AsyncIterator[ChatReply]:
        """Replies as they come; stops after ``idle_timeout`` seconds without one."""
        if self._consumer is None:
            raise RuntimeError("use `async with AsyncReplySubscriber(...)`, or await start() first")
        last = time.monotonic()
        while True:
            with client_errors():
                batches = await self._consumer.getmany(timeout_ms=200)
            for records in batches.values():
                for record in records:
                    last = time.monotonic()
                    try:
                        reply = decode_chat_reply(record.value)
                    except DecodeError as err:
                        await self._forward(record, err.reason, err.message)
                        continue
                    yield reply
            if batches:
                with client_errors():
                    await self._consumer.commit()
            if idle_timeout is not None and time.monotonic() - last > idle_timeout:
                return

    async def _forward(self, record: Any, reason: str, message: str) -> None:
        letter = DeadLetter.of(
            record, reason, message, f"replies:{self.group_id}", self.settings.max_record_bytes
        )
        with client_errors():
            delivery = await self._producer.send(
                self.settings.topic("dead-letters"),
                key=letter.key,
                value=letter.value,
                headers=letter.headers(),
            )
            await delivery
        self.dead_letters += 1

    async def close(self) -> None:
        clients, self._consumer, self._producer = (self._consumer, self._producer), None, None
        await stop_all(*clients)
