"""AsyncHistoryReader: conversations read back from the log, awaited; the core of
:class:`~goaicore.replay.reader.HistoryReader`, its sync facade. The Kafka store reads
a conversation's events with it, the auditor's replay and verify with its facade."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from goaicore.errors import client_errors
from goaicore.fold.admission import Unfoldable
from goaicore.fold.records import LogRecord, admitted, log_skipped
from goaicore.kafka.aio_connection import ConsumerReader, partitions_of
from goaicore.kafka.partition_reader import read_batches_async
from goaicore.kafka.partitioner import partition_for
from goaicore.records import ConversationEvent, LoggedEvent, LogPosition
from goaicore.records.validation import check_conversation_id
from goaicore.settings import Settings


class AsyncHistoryReader(ConsumerReader):
    """Read events from the ``events`` topic in log order.

    ``events(conversation_id)`` reads only that conversation's partition (every record
    is keyed by conversation id). Records that do not decode are skipped, counted in
    ``skipped`` and logged: reading is repeatable, so forwarding them to dead letters is
    left to the consumers that process the log.
    """

    def __init__(self, settings: Settings | None = None) -> None:
        super().__init__(settings, "events")
        self.skipped = 0

    async def events(self, conversation_id: str) -> AsyncIterator[ConversationEvent]:
        """One conversation's events, oldest first."""
        async for logged in self.logged_events(conversation_id):
            yield logged.event

    async def logged_events(
        self, conversation_id: str, until_offset: int | None = None
    ) -> AsyncIterator[LoggedEvent]:
        """One conversation's events with their positions, up to ``until_offset`` inclusive."""
        async for batch in self.record_batches(conversation_id, until_offset):
            for record in batch:
                logged = self._admit(record)
                if logged is not None:
                    yield logged

    async def records(
        self, conversation_id: str, until_offset: int | None = None
    ) -> AsyncIterator[LogRecord]:
        """The records under one conversation's key, as read, up to ``until_offset``."""
        async for batch in self.record_batches(conversation_id, until_offset):
            for record in batch:
                yield record

    async def record_batches(
        self, conversation_id: str, until_offset: int | None = None
    ) -> AsyncIterator[list[LogRecord]]:
        """:meth:`records` a fetch at a time."""
        check_conversation_id(conversation_id)
        partitions = await partitions_of(self._started(), self.topic)
        partition = partitions[partition_for(conversation_id, len(partitions))]
        key = conversation_id.encode()
        async for batch in self._read(partition, len(partitions)):
            if until_offset is not None and batch[-1].position.offset > until_offset:
                kept = [r for r in batch if r.position.offset <= until_offset and r.key == key]
                if kept:
                    yield kept
                return
            kept = [record for record in batch if record.key == key]
            if kept:
                yield kept

    async def all_events(self) -> AsyncIterator[LoggedEvent]:
        """The whole log, partition by partition."""
        async for batch in self.all_record_batches():
            for record in batch:
                logged = self._admit(record)
                if logged is not None:
                    yield logged

    async def all_record_batches(self) -> AsyncIterator[list[LogRecord]]:
        """Every record of the log as read, partition by partition, a fetch at a time."""
        partitions = await partitions_of(self._started(), self.topic)
        for partition in partitions:
            async for batch in self._read(partition, len(partitions)):
                yield batch

    async def end_total(self) -> int:
        """How many records the log's partitions hold up to their ends (for a progress bar)."""
        consumer = self._started()
        partitions = await partitions_of(consumer, self.topic)
        with client_errors():
            ends = await consumer.end_offsets(partitions)
        return sum(int(v or 0) for v in ends.values())

    def skip(self, record: LogRecord, reason: str, detail: str) -> None:
        """Count and log a record the fold does not take (the worker dead-lettered it)."""
        self.skipped += 1
        log_skipped(self.topic, record, reason, detail)

    async def _read(self, partition: Any, partitions: int) -> AsyncIterator[list[LogRecord]]:
        consumer = self._started()
        async for batch in read_batches_async(consumer, partition, settings=self.settings):
            yield [log_record(record, partitions) for record in batch]

    def _admit(self, record: LogRecord) -> LoggedEvent | None:
        logged = admitted(record, record_limit=self.settings.max_record_bytes)
        if isinstance(logged, Unfoldable):
            self.skip(record, logged.reason, logged.detail)
            return None
        return logged


def log_record(record: Any, partitions: int) -> LogRecord:
    """A consumed record (kafka-python's or aiokafka's) of a topic of ``partitions``
    partitions, as the fold takes it (which checks that its key belongs where it is)."""
    position = LogPosition(partition=record.partition, offset=record.offset)
    return LogRecord(record.key, record.value, position, origin=record, partitions=partitions)
