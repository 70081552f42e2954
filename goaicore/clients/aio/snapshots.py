"""AsyncSnapshotReader: the latest snapshot of each conversation, from the snapshots topic,
awaited; the core of :class:`~goaicore.clients.snapshots.SnapshotReader`."""

from __future__ import annotations

import asyncio
import sys

from goaicore.kafka.aio_connection import ConsumerReader, partitions_of
from goaicore.kafka.partition_reader import read_partitions_async, read_to_end_async
from goaicore.kafka.partitioner import partition_for
from goaicore.kafka.snapshots import decode_latest
from goaicore.progress import ProgressBar
from goaicore.records import ConversationSnapshot
from goaicore.records.validation import check_conversation_id
from goaicore.settings import Settings

READING = "reading snapshots"


class AsyncSnapshotReader(ConsumerReader):
    """Read folded snapshots from ``<prefix>.snapshots``: the last record of a key wins
    (the topic is compacted), a tombstone means none; undecodable ones are counted in
    ``skipped`` and logged."""

    def __init__(self, settings: Settings | None = None) -> None:
        super().__init__(settings, "snapshots")
        self.skipped = 0

    async def get(self, conversation_id: str) -> ConversationSnapshot | None:
        """The latest snapshot of one conversation, or None when it has none."""
        check_conversation_id(conversation_id)
        consumer = self._started()
        partitions = await partitions_of(consumer, self.topic)
        partition = partitions[partition_for(conversation_id, len(partitions))]
        key = conversation_id.encode()
        raw: dict[bytes, bytes | None] = {}
        async for record in read_to_end_async(consumer, partition, settings=self.settings):
            if record.key == key:
                raw[key] = record.value
        return self._decoded(raw).get(conversation_id)

    async def all(self, progress: bool | None = False) -> dict[str, ConversationSnapshot]:
        """The latest snapshot of every conversation (deleted ones included); a progress
        bar while reading when ``progress`` (None: when interactive)."""
        consumer = self._started()
        partitions = await partitions_of(consumer, self.topic)
        raw: dict[bytes, bytes | None] = {}
        bar = ProgressBar(sys.stderr.isatty() if progress is None else progress, 0, READING)
        try:
            async for batch in read_partitions_async(consumer, partitions, settings=self.settings):
                for record in batch:
                    bar.advance()
                    if record.key is not None:
                        raw[record.key] = record.value
        finally:
            bar.close()
        # Decoding every snapshot is long CPU work: off the event loop the caller shares.
        return await asyncio.to_thread(self._decoded, raw)

    def _decoded(self, raw: dict[bytes, bytes | None]) -> dict[str, ConversationSnapshot]:
        out, skipped = decode_latest(raw)
        self.skipped += skipped
        return out
