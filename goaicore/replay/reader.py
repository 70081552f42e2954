"""HistoryReader: read conversations back from the log, for auditors and tools; the sync
facade over :class:`~goaicore.replay.log_reader.AsyncHistoryReader`, handed a fetch at
a time, that also opens sealed events with the deployment's keys."""

from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING

from goaicore.fold.admission import Unfoldable
from goaicore.fold.records import LogRecord, admitted
from goaicore.progress import ProgressBar
from goaicore.records import ConversationEvent, LoggedEvent
from goaicore.replay.log_reader import AsyncHistoryReader
from goaicore.sealing.keyring import topic_key_ring
from goaicore.settings import Settings
from goaicore.sync import Blocking, blocking_iter, run_sync

if TYPE_CHECKING:
    from goaicore.sealing.records import KeyLookup


class HistoryReader(Blocking[AsyncHistoryReader]):
    """Read events from the ``events`` topic, in log order.

    ``events(conversation_id)`` reads only that conversation's partition (every
    record is keyed by conversation id). Records that do not decode are skipped,
    counted in ``skipped`` and logged: reading is repeatable, so forwarding them
    to dead letters is left to the consumers that process the log.
    """

    def __init__(self, settings: Settings | None = None) -> None:
        super().__init__(AsyncHistoryReader(settings))
        self.settings = self._core.settings
        self.topic = self._core.topic
        try:
            ring = topic_key_ring(self.settings)
        except BaseException:
            super().close()
            raise
        self.keys: KeyLookup | None = ring[0] if ring else None
        """Opens sealed events (None without GOAICORE_MASTER_KEYS: they read as erased)."""
        self._key_topic = ring[1] if ring else None

    @property
    def skipped(self) -> int:
        """Records skipped so far (each logged): undecodable, or set aside by the fold."""
        return self._core.skipped

    def events(self, conversation_id: str) -> Iterator[ConversationEvent]:
        """One conversation's events, oldest first."""
        for logged in self.logged_events(conversation_id):
            yield logged.event

    def logged_events(
        self, conversation_id: str, until_offset: int | None = None
    ) -> Iterator[LoggedEvent]:
        """One conversation's events with their positions, up to ``until_offset`` inclusive."""
        return self._admitted(self.records(conversation_id, until_offset))

    def records(self, conversation_id: str, until_offset: int | None = None) -> Iterator[LogRecord]:
        """The records under one conversation's key, as read, up to ``until_offset``."""
        batches = self._core.record_batches(conversation_id, until_offset)
        for batch in blocking_iter(batches, owner=self):
            yield from batch

    def all_events(self, progress: bool | None = None) -> Iterator[LoggedEvent]:
        """The whole log, partition by partition; a progress bar when interactive."""
        return self._admitted(self.all_records(progress))

    def all_records(self, progress: bool | None = None) -> Iterator[LogRecord]:
        """Every record of the log as read, partition by partition; a bar when interactive."""
        show = sys.stderr.isatty() if progress is None else progress
        bar = ProgressBar(show, run_sync(self._core.end_total()) if show else 0)
        try:
            for batch in blocking_iter(self._core.all_record_batches(), owner=self):
                yield from bar.counted(batch)
        finally:
            bar.close()

    def skip(self, record: LogRecord, reason: str, detail: str) -> None:
        """Count and log a record the fold does not take (the worker dead-lettered it)."""
        self._core.skip(record, reason, detail)

    def _admitted(self, records: Iterable[LogRecord]) -> Iterator[LoggedEvent]:
        for record in records:
            logged = admitted(record, self.keys, self.settings.max_record_bytes)
            if isinstance(logged, Unfoldable):
                self.skip(record, logged.reason, logged.detail)
            else:
                yield logged

    def close(self) -> None:
        try:
            super().close()
        finally:
            if self._key_topic is not None:
                self._key_topic.close()
