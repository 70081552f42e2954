"""AsyncTopicKeys: the keys topic as a process other than the worker follows it, awaited
(as :class:`~goaicore.sealing.keyring.TopicKeys` does with kafka-python).

A fold opens sealed events synchronously, so the ring built here never reads the
topic itself: :meth:`refresh` a conversation's partition first, then fold."""

from __future__ import annotations

from typing import Any, Self

from goaicore.kafka.aio_connection import partitions_of, start_consumer
from goaicore.kafka.partition_reader import read_to_end_async
from goaicore.kafka.partitioner import partition_for
from goaicore.lifecycle import AsyncRunning
from goaicore.records import ConversationKey
from goaicore.sealing.keyring import KeyRing, apply_key_records, master_keys
from goaicore.settings import Settings


class AsyncTopicKeys(AsyncRunning):
    """Conversations' data keys as the keys topic holds them, each partition read on to
    its end when asked; ``ring`` opens sealed content (None without master keys)."""

    def __init__(self, settings: Settings | None = None) -> None:
        self.settings = settings or Settings()
        self.topic = self.settings.topic("keys")
        self.stored: dict[str, ConversationKey] = {}
        masters = master_keys(self.settings)
        self.ring: KeyRing | None = KeyRing(masters, self.stored.get) if masters else None
        self._next: dict[int, int] = {}
        self._consumer: Any = None

    async def start(self) -> Self:
        if self._consumer is None:
            self._consumer = await start_consumer(self.settings)
        return self

    async def key_of(self, conversation_id: str) -> ConversationKey | None:
        """The conversation's data key as the topic holds it now (read on to its end)."""
        await self.refresh(conversation_id)
        return self.stored.get(conversation_id)

    async def refresh(self, *conversation_ids: str) -> None:
        """Read the conversations' partitions of the keys topic on to their ends."""
        if self._consumer is None:
            raise RuntimeError("use `async with AsyncTopicKeys(...)`, or await start() first")
        partitions = await partitions_of(self._consumer, self.topic)
        for number in sorted({partition_for(c, len(partitions)) for c in conversation_ids}):
            start = self._next.get(number)
            records = [
                record
                async for record in read_to_end_async(
                    self._consumer, partitions[number], start, settings=self.settings
                )
            ]
            apply_key_records(self.stored, records, self.topic)
            self._next[number] = records[-1].offset + 1 if records else (start or 0)

    async def close(self) -> None:
        consumer, self._consumer = self._consumer, None
        if consumer is not None:
            await consumer.stop()
