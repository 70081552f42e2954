"""AsyncTopicKeys: the keys topic as a process other than the worker follows it, awaited
(as :class:`~goaicore.sealing.keyring.TopicKeys` does with kafka-python).

A fold opens sealed events synchronously, so the ring built here never reads the
topic itself: :meth:`refresh` a conversation's partition first, then fold."""

from __future__ import annotations

from goaicore.kafka.aio_connection import ConsumerReader, partitions_of
from goaicore.kafka.partition_reader import read_to_end_async
from goaicore.kafka.partitioner import partition_for
from goaicore.records import ConversationKey
from goaicore.sealing.keyring import KeyRing, apply_key_records, master_keys
from goaicore.settings import Settings


class AsyncTopicKeys(ConsumerReader):
    """Conversations' data keys as the keys topic holds them, each partition read on to
    its end when asked; ``ring`` opens sealed content (None without master keys)."""

    def __init__(self, settings: Settings | None = None) -> None:
        super().__init__(settings, "keys")
        self.stored: dict[str, ConversationKey] = {}
        masters = master_keys(self.settings)
        self.ring: KeyRing | None = KeyRing(masters, self.stored.get) if masters else None
        self._next: dict[int, int] = {}

    async def key_of(self, conversation_id: str) -> ConversationKey | None:
        """The conversation's data key as the topic holds it now (read on to its end)."""
        await self.refresh(conversation_id)
        return self.stored.get(conversation_id)

    async def refresh(self, *conversation_ids: str) -> None:
        """Read the conversations' partitions of the keys topic on to their ends."""
        consumer = self._started()
        partitions = await partitions_of(consumer, self.topic)
        for number in sorted({partition_for(c, len(partitions)) for c in conversation_ids}):
            start = self._next.get(number)
            records = [
                record
                async for record in read_to_end_async(
                    consumer, partitions[number], start, settings=self.settings
                )
            ]
            apply_key_records(self.stored, records, self.topic)
            self._next[number] = records[-1].offset + 1 if records else (start or 0)
