"""SnapshotReader: the latest snapshot of each conversation, from the snapshots topic.

The topic is compacted, so it holds at least the latest value per key (and,
until compaction runs, older ones too): the last record of a key wins.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable

from goaicore.config import Settings
from goaicore.kafka.connection import make_consumer, topic_partitions
from goaicore.kafka.partition_reader import read_to_end
from goaicore.kafka.partitioner import partition_for
from goaicore.kafka.snapshots import decode_latest
from goaicore.lifecycle import Closing
from goaicore.progress import ProgressBar
from goaicore.records import ConversationSnapshot
from goaicore.records.validation import check_conversation_id


class SnapshotReader(Closing):
    """Read folded snapshots as any consumer can: from ``<prefix>.snapshots``."""

    def __init__(self, settings: Settings | None = None) -> None:
        self.settings = settings or Settings()
        self.topic = self.settings.topic("snapshots")
        self.skipped = 0
        self._consumer = make_consumer(self.settings)

    def get(self, conversation_id: str) -> ConversationSnapshot | None:
        """The latest snapshot of one conversation, or None when it has none."""
        check_conversation_id(conversation_id)
        partitions = topic_partitions(self._consumer, self.topic)
        partition = partitions[partition_for(conversation_id, len(partitions))]
        latest = self._latest([partition], progress=False, keys={conversation_id.encode()})
        return latest.get(conversation_id)

    def all(self, progress: bool | None = None) -> dict[str, ConversationSnapshot]:
        """The latest snapshot of every conversation (deleted ones included)."""
        partitions = topic_partitions(self._consumer, self.topic)
        return self._latest(partitions, progress=progress, keys=None)

    def _latest(
        self, partitions: Iterable[object], progress: bool | None, keys: set[bytes] | None
    ) -> dict[str, ConversationSnapshot]:
        raw: dict[bytes, bytes | None] = {}
        show = sys.stderr.isatty() if progress is None else progress
        bar = ProgressBar(show, 0, "reading snapshots")
        try:
            for partition in partitions:
                for record in read_to_end(self._consumer, partition, settings=self.settings):
                    bar.advance()
                    if record.key is not None and (keys is None or record.key in keys):
                        raw[record.key] = record.value
        finally:
            bar.close()
        out, skipped = decode_latest(raw)
        self.skipped += skipped
        return out

    def close(self) -> None:
        self._consumer.close()
