"""AsyncReplySubscriber: ReplySubscriber for asyncio: ``async for reply in subscriber``."""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncIterator
from typing import Any, Self

from goaicore.errors import client_errors
from goaicore.kafka.aio_connection import start_consumer, stop_all
from goaicore.lifecycle import AsyncRunning
from goaicore.records import ChatReply
from goaicore.records.avro.api import decode_chat_reply
from goaicore.records.avro.errors import DecodeError
from goaicore.settings import Settings

log = logging.getLogger(__name__)


class AsyncReplySubscriber(AsyncRunning):
    """Chat replies as a member of consumer group ``group_id``, as they come.

    As :class:`~goaicore.clients.ReplySubscriber`: members of a group share the
    partitions; offsets are committed when the next batch is asked for (at least
    once); an undecodable record is skipped, counted (``skipped``) and logged, and
    iteration goes on. Its dead letter is the projector's, which reads every reply: one
    per bad record, however many groups subscribe.
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
        self.skipped = 0
        self._consumer: Any = None

    async def start(self) -> Self:
        if self._consumer is not None:
            return self
        try:
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
                        self._skip(record, err.reason, err.message)
                        continue
                    yield reply
            if batches:
                with client_errors():
                    await self._consumer.commit()
            if idle_timeout is not None and time.monotonic() - last > idle_timeout:
                return

    def _skip(self, record: Any, reason: str, message: str) -> None:
        self.skipped += 1
        log.warning(
            "skipped an undecodable reply at %s[%d]@%d: %s (%s)",
            record.topic,
            record.partition,
            record.offset,
            reason,
            message,
        )

    async def close(self) -> None:
        consumer, self._consumer = self._consumer, None
        await stop_all(consumer)
