"""AsyncSnapshotReader: the latest snapshot of each conversation, from the snapshots topic,
awaited; the core of :class:`~goaicore.clients.snapshots.SnapshotReader`.

A reader remembers, for each partition of the topic, the offset it has read to, and the
latest record of the conversations it was asked for (the :data:`REMEMBERED` most
recently asked). Asked for a conversation it remembers, it reads only the partition's
records after that offset; asked for one it does not, it reads the partition from its
beginning, as a reader with no memory would, and remembers it from then on. Either way
the read goes on to the end the partition had when the read began, and every
remembered conversation of that partition takes what it finds there. The topic is
compacted, and compaction only removes records that a later one of the same key
replaces, so a remembered latest record stays the latest until a newer one comes.
"""

from __future__ import annotations

import asyncio
import sys
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from goaicore.kafka.aio_connection import ConsumerReader, partitions_of
from goaicore.kafka.partition_reader import ReadSpan, read_batches_async, read_partitions_async
from goaicore.kafka.partitioner import partition_for
from goaicore.kafka.snapshots import decode_latest
from goaicore.progress import ProgressBar
from goaicore.records import ConversationSnapshot
from goaicore.records.validation import check_conversation_id
from goaicore.settings import Settings

READING = "reading snapshots"

REMEMBERED = 256
"""Conversations whose latest snapshot a reader remembers (least recently asked for
out). Enough for the conversations one process serves at once (a session, a web
worker's users). Each costs about its snapshot in memory, which the record limit
bounds (900 KB encoded by default: a few hundred MB if all of them were that large; a
few MB for typical snapshots of some KB). A conversation let go costs only what every
read cost without this memory: its partition read from the beginning."""


@dataclass(frozen=True)
class SnapshotRead:
    """A conversation's latest snapshot, and where in the snapshots topic it was read:
    every record of ``partition`` below ``end`` was taken into account."""

    snapshot: ConversationSnapshot | None
    partition: int
    end: int


@dataclass
class _Latest:
    """A remembered conversation's partition and latest record: its value (None: none,
    or a tombstone) until it is decoded once, then its snapshot."""

    partition: int
    value: bytes | None
    decoded: bool = False
    snapshot: ConversationSnapshot | None = None

    def take(self, value: bytes | None) -> None:
        """A newer record of the conversation."""
        self.value, self.decoded, self.snapshot = value, False, None


class AsyncSnapshotReader(ConsumerReader):
    """Read folded snapshots from ``<prefix>.snapshots``: the last record of a key wins
    (the topic is compacted), a tombstone means none; undecodable ones are counted in
    ``skipped`` and logged. ``records_read`` counts the records :meth:`get` read (see the
    module docstring for what a reader remembers between reads)."""

    def __init__(self, settings: Settings | None = None) -> None:
        super().__init__(settings, "snapshots")
        self.skipped = 0
        self.records_read = 0
        self._partitions: list[Any] = []
        self._read_to: dict[int, int] = {}
        """Per partition: every record below this offset was read for the remembered
        conversations of the partition."""
        self._latest: OrderedDict[bytes, _Latest] = OrderedDict()

    async def get(self, conversation_id: str) -> ConversationSnapshot | None:
        """The latest snapshot of one conversation, or None when it has none."""
        return (await self.read(conversation_id)).snapshot

    async def read(self, conversation_id: str, end_at: int | None = None) -> SnapshotRead:
        """:meth:`get`, with where in the topic it was read up to. ``end_at``: an end the
        conversation's partition is known to have reached (a fetch's high watermark), to
        read to instead of asking the broker for its end."""
        check_conversation_id(conversation_id)
        partitions = await self._topic_partitions()
        partition = partitions[partition_for(conversation_id, len(partitions))]
        key = conversation_id.encode()
        latest, end = await self._catch_up(partition, key, end_at)
        self._remember(key, latest)
        return SnapshotRead(self._snapshot(conversation_id, latest), partition.partition, end)

    def remembered(self, conversation_id: str) -> SnapshotRead | None:
        """The conversation's latest snapshot as this reader last read it, with no read
        (None when it does not remember the conversation): it may be out of date, and
        :meth:`read` reads on from its ``end``."""
        key = conversation_id.encode()
        latest = self._latest.get(key)
        if latest is None:
            return None
        snapshot = self._snapshot(conversation_id, latest)
        return SnapshotRead(snapshot, latest.partition, self._read_to[latest.partition])

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

    async def _topic_partitions(self) -> list[Any]:
        """The topic's partitions, asked of the broker once (a topic keeps its count:
        every key's partition depends on it)."""
        if not self._partitions:
            self._partitions = await partitions_of(self._started(), self.topic)
        return self._partitions

    async def _catch_up(
        self, partition: Any, key: bytes, end_at: int | None
    ) -> tuple[_Latest, int]:
        """The latest record of ``key`` in ``partition`` and the offset the partition was
        read to (``end_at``, or its end): from where this reader had read it to when
        ``key`` is remembered, else from the beginning. Every remembered key of the
        partition takes the records after where it was read to."""
        number = partition.partition
        known = self._latest.get(key)
        since = self._read_to.get(number)
        if end_at is not None and since is not None and end_at <= since:
            if known is not None:  # read past there already: nothing more to take
                return known, since
            end_at = None  # read to the end, not back to an end that was passed
        latest = known or _Latest(number, None)
        start = since if known is not None else None
        span = ReadSpan()
        async for batch in read_batches_async(
            self._started(), partition, start, self.settings, span=span, end_at=end_at
        ):
            self.records_read += len(batch)
            for record in batch:
                if record.key == key:
                    latest.take(record.value)
                elif since is not None and record.offset >= since:
                    other = self._latest.get(record.key) if record.key is not None else None
                    if other is not None and other.partition == number:
                        other.take(record.value)
        if since is not None and span.end < since:
            # The partition's log ends before where this reader had read to: it is not the
            # log that was read (the topic was made again). Nothing remembered of it holds.
            self._forget(number)
            if known is not None:
                return await self._catch_up(partition, key, None)
        self._read_to[number] = span.end
        return latest, span.end

    def _snapshot(self, conversation_id: str, latest: _Latest) -> ConversationSnapshot | None:
        if not latest.decoded:
            key = conversation_id.encode()
            latest.snapshot = self._decoded({key: latest.value}).get(conversation_id)
            latest.value, latest.decoded = None, True  # the snapshot is kept, not both
        return latest.snapshot

    def _remember(self, key: bytes, latest: _Latest) -> None:
        self._latest[key] = latest
        self._latest.move_to_end(key)
        while len(self._latest) > REMEMBERED:
            self._latest.popitem(last=False)

    def _forget(self, partition: int) -> None:
        """Forget every remembered conversation of ``partition`` and where it was read to."""
        for key in [k for k, latest in self._latest.items() if latest.partition == partition]:
            del self._latest[key]
        self._read_to.pop(partition, None)

    def _decoded(self, raw: dict[bytes, bytes | None]) -> dict[str, ConversationSnapshot]:
        out, skipped = decode_latest(raw)
        self.skipped += skipped
        return out
