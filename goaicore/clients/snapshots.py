"""SnapshotReader: the latest snapshot of each conversation, from the snapshots topic; the
sync facade over :class:`~goaicore.clients.aio.snapshots.AsyncSnapshotReader`."""

from __future__ import annotations

from goaicore.clients.aio.snapshots import AsyncSnapshotReader
from goaicore.records import ConversationSnapshot
from goaicore.settings import Settings
from goaicore.sync import Blocking, run_sync


class SnapshotReader(Blocking[AsyncSnapshotReader]):
    """Read folded snapshots as any consumer can: from ``<prefix>.snapshots`` (compacted:
    the last record of a key wins, a tombstone means none; undecodable ones are counted
    in ``skipped`` and logged)."""

    def __init__(self, settings: Settings | None = None) -> None:
        super().__init__(AsyncSnapshotReader(settings))
        self.settings = self._core.settings
        self.topic = self._core.topic

    @property
    def skipped(self) -> int:
        return self._core.skipped

    def get(self, conversation_id: str) -> ConversationSnapshot | None:
        """The latest snapshot of one conversation, or None when it has none."""
        return run_sync(self._core.get(conversation_id))

    def all(self, progress: bool | None = None) -> dict[str, ConversationSnapshot]:
        """The latest snapshot of every conversation (deleted ones included); a progress
        bar while reading when ``progress`` (None: when interactive)."""
        return run_sync(self._core.all(progress))
