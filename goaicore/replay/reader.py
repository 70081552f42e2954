"""HistoryReader: read conversations back from the log, for auditors and tools."""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any

from goaicore.config import Settings
from goaicore.extras import needs
from goaicore.fold.admission import Unfoldable
from goaicore.fold.records import LogRecord, admitted, log_skipped
from goaicore.kafka.connection import make_consumer, topic_partitions
from goaicore.kafka.partition_reader import read_to_end
from goaicore.kafka.partitioner import partition_for
from goaicore.lifecycle import Closing
from goaicore.progress import ProgressBar
from goaicore.records import ConversationEvent, LoggedEvent, LogPosition
from goaicore.records.validation import check_conversation_id
from goaicore.sealing.keyring import topic_key_ring

if TYPE_CHECKING:
    from goaicore.sealing.records import KeyLookup

log = logging.getLogger(__name__)


class HistoryReader(Closing):
    """Read events from the ``events`` topic, in log order.

    ``events(conversation_id)`` reads only that conversation's partition (every
    record is keyed by conversation id). Records that do not decode are skipped,
    counted in ``skipped`` and logged: reading is repeatable, so forwarding them
    to dead letters is left to the consumers that process the log.
    """

    def __init__(self, settings: Settings | None = None) -> None:
        self.settings = settings or Settings()
        self.topic = self.settings.topic("events")
        self.skipped = 0
        self._consumer = make_consumer(self.settings)
        ring = topic_key_ring(self.settings)
        self.keys: KeyLookup | None = ring[0] if ring else None
        """Opens sealed events (None without GOAICORE_MASTER_KEYS: they read as erased)."""
        self._key_topic = ring[1] if ring else None

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
        with needs("kafka"):
            from kafka import TopicPartition

        check_conversation_id(conversation_id)
        partition = TopicPartition(
            self.topic, partition_for(conversation_id, self._partition_count())
        )
        key = conversation_id.encode()
        for record in self._read(partition):
            if until_offset is not None and record.position.offset > until_offset:
                return
            if record.key == key:
                yield record

    def all_events(self, progress: bool | None = None) -> Iterator[LoggedEvent]:
        """The whole log, partition by partition; a progress bar when interactive."""
        return self._admitted(self.all_records(progress))

    def all_records(self, progress: bool | None = None) -> Iterator[LogRecord]:
        """Every record of the log as read, partition by partition; a bar when interactive."""
        partitions = topic_partitions(self._consumer, self.topic)
        show = sys.stderr.isatty() if progress is None else progress
        totals = self._consumer.end_offsets(partitions) if show else {}
        bar = ProgressBar(show, sum(int(v or 0) for v in totals.values()))
        try:
            for partition in partitions:
                yield from bar.counted(self._read(partition))
        finally:
            bar.close()

    def skip(self, record: LogRecord, reason: str, detail: str) -> None:
        """Count and log a record the fold does not take (the worker dead-lettered it)."""
        self.skipped += 1
        log_skipped(self.topic, record, reason, detail)

    def _read(self, partition: Any) -> Iterator[LogRecord]:
        for record in read_to_end(self._consumer, partition, settings=self.settings):
            yield log_record(record)

    def _admitted(self, records: Iterable[LogRecord]) -> Iterator[LoggedEvent]:
        for record in records:
            logged = admitted(record, self.keys)
            if isinstance(logged, Unfoldable):
                self.skip(record, logged.reason, logged.detail)
            else:
                yield logged

    def _partition_count(self) -> int:
        return len(topic_partitions(self._consumer, self.topic))

    def close(self) -> None:
        self._consumer.close()
        if self._key_topic is not None:
            self._key_topic.close()


def log_record(record: Any) -> LogRecord:
    """A consumed record (kafka-python's or aiokafka's) as the fold takes it."""
    position = LogPosition(partition=record.partition, offset=record.offset)
    return LogRecord(record.key, record.value, position, origin=record)
