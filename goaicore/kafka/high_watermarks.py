"""The current end of a topic's partitions, asked of the broker: where read-your-writes
waits to (:mod:`goaicore.store.read_your_writes`)."""

from __future__ import annotations

import asyncio
import logging
import time
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from aiokafka import AIOKafkaConsumer  # type: ignore[import-untyped]
from aiokafka.structs import TopicPartition  # type: ignore[import-untyped]

from goaicore.kafka.profile import client_profile
from goaicore.kafka.security import aiokafka_options
from goaicore.settings import Settings

log = logging.getLogger(__name__)

# How long a high-watermark question may wait for a fetch to answer.
FETCH_ANSWER_TIMEOUT = 2.0


@dataclass
class _PartitionQuery:
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    started: float = -1.0
    value: int = 0


class HighWatermarks:
    """The current end of ``events`` (or ``intake``) partitions, asked of the broker.

    With Apache Kafka the end-offset answer (ListOffsets) is exact. The embedded
    broker's can be too low (``goaicore.kafka.profile``), so under its profile the end is taken
    from the high watermark of a fetch made after the question was asked.
    Concurrent questions about one partition share one answer when it was
    asked after theirs began.
    """

    def __init__(self, settings: Settings, name: str = "events") -> None:
        self.settings = settings
        self.topic = settings.topic(name)
        self.trust_end_offsets = client_profile(settings).trust_end_offsets
        self._consumer: Any = None
        self._queries: dict[int, _PartitionQuery] = defaultdict(_PartitionQuery)
        self._starting: asyncio.Lock | None = None

    async def start(self) -> None:
        """Connect (once; later calls wait for the first)."""
        if self._starting is None:
            self._starting = asyncio.Lock()
        async with self._starting:
            if self._consumer is None:
                self._consumer = await self._connect()

    async def _connect(self) -> Any:
        consumer = AIOKafkaConsumer(
            bootstrap_servers=self.settings.require_bootstrap().split(","),
            client_id="goaicore-store-watermarks",
            enable_auto_commit=False,
            fetch_max_wait_ms=5,
            max_partition_fetch_bytes=1024,
            **aiokafka_options(self.settings),
        )
        await consumer.start()
        partitions = [TopicPartition(self.topic, p) for p in range(self.settings.partitions)]
        consumer.assign(partitions)
        # Fetch only while answering a question (never, when end offsets are trusted): a
        # fetch waiting on the broker would hold up the end-offset question behind it on
        # the same connection.
        consumer.pause(*partitions)
        return consumer

    async def stop(self) -> None:
        if self._consumer is not None:
            await self._consumer.stop()
            self._consumer = None

    async def get(self, partition: int) -> int:
        """The partition's end as it stood at (or after) the moment of the call."""
        asked = time.monotonic()
        query = self._queries[partition]
        async with query.lock:
            if query.started >= asked:
                return query.value  # answered by a question asked after ours began
            query.started = time.monotonic()
            query.value = await self._ask(partition)
            return query.value

    async def _ask(self, partition: int) -> int:
        await self.start()
        consumer = self._consumer
        tp = TopicPartition(self.topic, partition)
        ends = await consumer.end_offsets([tp])
        hint = int(ends[tp] or 0)
        if self.trust_end_offsets:
            return hint
        # Fetch from the (possibly low) hint; the response carries the true high watermark.
        asked_ms = time.time() * 1000
        deadline = time.monotonic() + FETCH_ANSWER_TIMEOUT
        consumer.seek(tp, hint)
        consumer.resume(tp)
        try:
            while time.monotonic() < deadline:
                await consumer.getmany(tp, timeout_ms=2, max_records=1)
                highwater = consumer.highwater(tp)
                fetched_ms = consumer.last_poll_timestamp(tp)
                if highwater is not None and fetched_ms is not None and fetched_ms >= asked_ms:
                    return max(int(highwater), hint)
        finally:
            consumer.pause(tp)
        # No fetch answered in time: never hold the question (and every later one on
        # this partition) forever. Answer with the end-offset hint, a lower bound, and
        # start over with a fresh consumer next time.
        log.warning(
            "no fetch answer for %s[%d] in %.0f s; using the end-offset answer %d",
            self.topic,
            partition,
            FETCH_ANSWER_TIMEOUT,
            hint,
        )
        await self.stop()
        return hint
