"""``goaicore verify`` over the whole log, its partitions shared among processes.

Verifying costs far more than reading: every event is decoded and folded in Python,
while aiokafka's C parser reads the records. A conversation's events and its snapshots
sit in the same partition number of their co-partitioned topics, so each shard of
partitions is verified on its own: its snapshots read, then its events folded onto
replays of them in one pass. Shards run in processes of their own (one per core, by
default), each reading with its own consumer, and their reports are merged in the
order a single pass would give.
"""

from __future__ import annotations

import asyncio
import gc
import multiprocessing
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor, wait
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from goaicore.clients.aio.connection import start_consumer
from goaicore.clients.snapshots import decode_latest
from goaicore.config import Settings
from goaicore.kafka.connection import make_consumer, partition_for, topic_partitions
from goaicore.kafka.partition_reader import read_partitions_async
from goaicore.kafka.topics import TopicMismatchError
from goaicore.logs import configure_from_environment
from goaicore.progress import ProgressBar
from goaicore.records.validation import check_conversation_id
from goaicore.replay.reader import log_record, log_skipped
from goaicore.replay.verify import LogVerifier, VerifyReport
from goaicore.sealing.keyring import topic_key_ring

WAIT_SECONDS = 0.2
"""How often the parent redraws the progress bar while shards run."""


@dataclass(frozen=True)
class Shard:
    """Partitions verified together; ``conversation_ids``: the named ones among them."""

    partitions: tuple[int, ...]
    conversation_ids: tuple[str, ...] = ()


@dataclass
class ShardResult:
    """One shard's report, and the records it set aside (each logged where it was read)."""

    report: VerifyReport
    skipped_events: int = 0
    skipped_snapshots: int = 0


def verify_against_log(
    settings: Settings,
    conversation_ids: Iterable[str] = (),
    progress: bool | None = None,
    processes: int = 1,
) -> ShardResult:
    """Verify the stored snapshots (those named, or all) against one read of the log,
    in up to ``processes`` processes (1: in this one). More than one are spawned, so a
    script calling this runs it under ``if __name__ == "__main__":``."""
    named = list(dict.fromkeys(conversation_ids))
    for conversation_id in named:
        check_conversation_id(conversation_id)
    partitions, totals = _partitions(settings, progress)
    shards = plan_shards(partitions, named, processes)
    ctx = multiprocessing.get_context("spawn")
    counter = ctx.Value("q", 0)
    bar = ProgressBar(bool(totals), sum(totals.get(p, 0) for s in shards for p in s.partitions))
    try:
        results = _run(ctx, counter, settings, shards, lambda: bar.update(counter.value))
    finally:
        bar.close()
    return merge(results, named)


def plan_shards(partitions: int, named: Sequence[str], processes: int) -> list[Shard]:
    """At most ``processes`` shards of the partitions to read: all, or those of the named
    conversations, dealt out in turn so that each shard gets as many."""
    if named:
        by_partition: dict[int, list[str]] = {}
        for conversation_id in named:
            by_partition.setdefault(partition_for(conversation_id, partitions), []).append(
                conversation_id
            )
        wanted = sorted(by_partition)
    else:
        by_partition, wanted = {}, list(range(partitions))
    count = max(1, min(processes, len(wanted)))
    shards = []
    for index in range(count):
        mine = tuple(wanted[index::count])
        ids = tuple(c for p in mine for c in by_partition.get(p, ()))
        shards.append(Shard(mine, ids))
    return shards


def merge(results: Sequence[ShardResult], named: Sequence[str]) -> ShardResult:
    """One report from the shards', in the order one pass gives (the named order, else
    by conversation id)."""
    order = {conversation_id: index for index, conversation_id in enumerate(named)}

    def place(conversation_id: str) -> tuple[int, str]:
        return order.get(conversation_id, len(order)), conversation_id

    report = VerifyReport()
    for result in results:
        part = result.report
        report.checked += part.checked
        report.differences += part.differences
        report.pending += part.pending
        report.unknown += part.unknown
        report.unreadable.update(part.unreadable)
    report.differences.sort(key=lambda difference: place(difference.conversation_id))
    report.pending.sort(key=place)
    report.unknown.sort(key=place)
    report.unreadable = dict(sorted(report.unreadable.items(), key=lambda item: place(item[0])))
    return ShardResult(
        report,
        sum(r.skipped_events for r in results),
        sum(r.skipped_snapshots for r in results),
    )


def verify_shard(settings: Settings, shard: Shard) -> ShardResult:
    """Verify one shard's conversations: its snapshots, then its events, read once each."""
    with _rare_full_collections():
        return asyncio.run(_verify_shard(settings, shard))


@contextmanager
def _rare_full_collections() -> Iterator[None]:
    """The cyclic garbage collector scanning only young objects, and those seldom.

    A verify holds every replay and stored snapshot while it makes millions of
    short-lived ones; with the default thresholds the collector scans the long-lived
    ones again and again (a quarter of a verify's time). The fold makes no cycles:
    reference counting frees its garbage, and young cycles are still collected.
    """
    before = gc.get_threshold()
    gc.set_threshold(100_000, 50, 1_000_000)
    try:
        yield
    finally:
        gc.set_threshold(*before)


async def _verify_shard(settings: Settings, shard: Shard) -> ShardResult:
    from aiokafka import TopicPartition  # type: ignore[import-untyped]

    named = {conversation_id.encode() for conversation_id in shard.conversation_ids}
    consumer = await start_consumer(settings)
    ring = topic_key_ring(settings)
    try:
        latest: dict[bytes, bytes | None] = {}
        snapshots = [TopicPartition(settings.topic("snapshots"), p) for p in shard.partitions]
        async for batch in read_partitions_async(consumer, snapshots, settings):
            for record in batch:
                if record.key is not None and (not named or record.key in named):
                    latest[record.key] = record.value
            _count(len(batch))
        stored, skipped_snapshots = decode_latest(latest)
        del latest
        verifier = LogVerifier(stored, shard.conversation_ids, ring[0] if ring else None)
        topic = settings.topic("events")
        skipped = 0
        events = [TopicPartition(topic, p) for p in shard.partitions]
        async for batch in read_partitions_async(consumer, events, settings):
            for rejected in verifier.feed(map(log_record, batch)):
                skipped += 1
                log_skipped(topic, rejected.record, rejected.reason, rejected.detail)
            _count(len(batch))
        return ShardResult(verifier.report(), skipped, skipped_snapshots)
    finally:
        await consumer.stop()
        if ring is not None:
            ring[1].close()


def _partitions(settings: Settings, progress: bool | None) -> tuple[int, dict[int, int]]:
    """How many partitions the events and snapshots topics each have (MissingTopicError:
    one is missing; TopicMismatchError: not co-partitioned), and when a bar is shown, how
    many records each partition number holds in both."""
    consumer = make_consumer(settings)
    try:
        events = topic_partitions(consumer, settings.topic("events"))
        snapshots = topic_partitions(consumer, settings.topic("snapshots"))
        if len(snapshots) != len(events):
            raise TopicMismatchError(
                f"topic {settings.topic('snapshots')} has {len(snapshots)} partitions and "
                f"{settings.topic('events')} {len(events)}: a conversation's snapshots must be "
                "in its events' partition number"
            )
        if not (sys.stderr.isatty() if progress is None else progress):
            return len(events), {}
        totals: dict[int, int] = {}
        for partition, end in consumer.end_offsets([*events, *snapshots]).items():
            totals[partition.partition] = totals.get(partition.partition, 0) + int(end or 0)
        return len(events), totals
    finally:
        consumer.close()


def _run(
    ctx: Any, counter: Any, settings: Settings, shards: Sequence[Shard], redraw: Callable[[], None]
) -> list[ShardResult]:
    """The first shard in this process, the others each in a process spawned first (its
    start-up overlaps the work here); the results in the shards' order."""
    _count_into(counter, redraw)
    try:
        if len(shards) == 1:
            return [verify_shard(settings, shards[0])]
        with ProcessPoolExecutor(
            len(shards) - 1, mp_context=ctx, initializer=_start_child, initargs=(counter,)
        ) as pool:
            futures = [pool.submit(verify_shard, settings, shard) for shard in shards[1:]]
            try:
                here = verify_shard(settings, shards[0])
            except BaseException:
                pool.shutdown(wait=False, cancel_futures=True)
                raise
            pending: set[Future[ShardResult]] = set(futures)
            while pending:
                _, pending = wait(pending, timeout=WAIT_SECONDS)
                redraw()
            return [here, *(future.result() for future in futures)]
    finally:
        _count_into(None, None)


_counter: Any = None
"""The records read by every shard, shared by their processes (for the progress bar)."""
_redraw: Callable[[], None] | None = None
"""In the process that shows the bar: redraws it."""


def _count_into(counter: Any, redraw: Callable[[], None] | None) -> None:
    global _counter, _redraw
    _counter, _redraw = counter, redraw


def _start_child(counter: Any) -> None:
    """A shard process logs as the command does, and counts its records for the bar."""
    configure_from_environment()
    _count_into(counter, None)


def _count(records: int) -> None:
    if _counter is not None:
        with _counter.get_lock():
            _counter.value += records
    if _redraw is not None:
        _redraw()
