"""AsyncHistoryReader: HistoryReader for asyncio: a conversation's events, awaited."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any, Self

from goaicore.config import Settings
from goaicore.fold.admission import Unfoldable
from goaicore.fold.records import LogRecord, admitted, log_skipped
from goaicore.kafka.aio_connection import partitions_of, start_consumer
from goaicore.kafka.partition_reader import read_to_end_async
from goaicore.kafka.partitioner import partition_for
from goaicore.lifecycle import AsyncRunning
from goaicore.records import ConversationEvent, LoggedEvent
from goaicore.records.validation import check_conversation_id
from goaicore.replay.reader import log_record


class AsyncHistoryReader(AsyncRunning):
    """Read events from the ``events`` topic in log order, as
    :class:`~goaicore.clients.HistoryReader` does: one conversation's partition only,
    undecodable records skipped and counted in ``skipped``."""

    def __init__(self, settings: Settings | None = None) -> None:
        self.settings = settings or Settings()
        self.topic = self.settings.topic("events")
        self.skipped = 0
        self._consumer: Any = None

    async def start(self) -> Self:
        if self._consumer is None:
            self._consumer = await start_consumer(self.settings)
        return self

    async def events(self, conversation_id: str) -> AsyncIterator[ConversationEvent]:
        """One conversation's events, oldest first."""
        async for logged in self.logged_events(conversation_id):
            yield logged.event

    async def logged_events(
        self, conversation_id: str, until_offset: int | None = None
    ) -> AsyncIterator[LoggedEvent]:
        """One conversation's events with their positions, up to ``until_offset`` inclusive."""
        async for record in self.records(conversation_id, until_offset):
            logged = self._admit(record)
            if logged is not None:
                yield logged

    async def records(
        self, conversation_id: str, until_offset: int | None = None
    ) -> AsyncIterator[LogRecord]:
        """The records under one conversation's key, as read, up to ``until_offset``."""
        check_conversation_id(conversation_id)
        partitions = await partitions_of(self._started(), self.topic)
        partition = partitions[partition_for(conversation_id, len(partitions))]
        key = conversation_id.encode()
        async for record in self._read(partition):
            if until_offset is not None and record.position.offset > until_offset:
                return
            if record.key == key:
                yield record

    async def all_events(self) -> AsyncIterator[LoggedEvent]:
        """The whole log, partition by partition."""
        for partition in await partitions_of(self._started(), self.topic):
            async for record in self._read(partition):
                logged = self._admit(record)
                if logged is not None:
                    yield logged

    async def _read(self, partition: Any) -> AsyncIterator[LogRecord]:
        consumer = self._started()
        async for record in read_to_end_async(consumer, partition, settings=self.settings):
            yield log_record(record)

    def _admit(self, record: LogRecord) -> LoggedEvent | None:
        logged = admitted(record)
        if isinstance(logged, Unfoldable):
            self.skipped += 1
            log_skipped(self.topic, record, logged.reason, logged.detail)
            return None
        return logged

    def _started(self) -> Any:
        if self._consumer is None:
            raise RuntimeError("use `async with AsyncHistoryReader(...)`, or await start() first")
        return self._consumer

    async def close(self) -> None:
        consumer, self._consumer = self._consumer, None
        if consumer is not None:
            await consumer.stop()
