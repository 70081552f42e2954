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
import os
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from multiprocessing.connection import wait as wait_for_any
from typing import Any

from goaicore.errors import GoaicoreError
from goaicore.fold.records import log_skipped
from goaicore.kafka.aio_connection import partitions_of, start_consumer
from goaicore.kafka.connection import make_consumer, topic_partitions
from goaicore.kafka.partition_reader import read_partitions_async
from goaicore.kafka.partitioner import partition_for
from goaicore.kafka.snapshots import decode_latest
from goaicore.kafka.topics import TopicMismatchError
from goaicore.logs import configure_from_environment
from goaicore.progress import ProgressBar
from goaicore.records.validation import check_conversation_id
from goaicore.replay.log_reader import log_record
from goaicore.replay.verify import LogVerifier, VerifyReport
from goaicore.sealing.keyring import topic_key_ring
from goaicore.settings import Settings

WAIT_SECONDS = 0.2
"""How long the parent waits for a shard process's result at a time."""


@dataclass(frozen=True)
class Shard:
    """Partitions verified together; ``conversation_ids``: the named ones among them."""

    partitions: tuple[int, ...]
    conversation_ids: tuple[str, ...] = ()


@dataclass
class VerifyResult:
    """A verify's report (a shard's, or all shards' merged), and the records it set aside
    (each logged where it was read)."""

    report: VerifyReport
    skipped_events: int = 0
    skipped_snapshots: int = 0


def verify_against_log(
    settings: Settings,
    conversation_ids: Iterable[str] = (),
    progress: bool | None = None,
    processes: int = 1,
) -> VerifyResult:
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
        others = _ShardProcesses(ctx, counter, settings, shards[1:])
        counted = _Counted(counter, bar, others.check)
        results = others.run(lambda: verify_shard(settings, shards[0], counted))
    finally:
        bar.close()
    return merge(results, named)


def default_processes() -> int:
    """The cores this process may run on (its CPU affinity), not the machine's count."""
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return os.cpu_count() or 1


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


def merge(results: Sequence[VerifyResult], named: Sequence[str]) -> VerifyResult:
    """One result from the shards': differences, pending and unknown conversations in the
    order one pass gives (the named order, else by conversation id), and the unreadable
    ones in that order too."""
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
    return VerifyResult(
        report,
        sum(r.skipped_events for r in results),
        sum(r.skipped_snapshots for r in results),
    )


def verify_shard(
    settings: Settings, shard: Shard, read: Callable[[int], None] = lambda records: None
) -> VerifyResult:
    """Verify one shard's conversations: its snapshots, then its events, read once each
    (``read`` is told each batch's size). Runs its own event loop: not callable from one."""
    with _rare_full_collections():
        return asyncio.run(_verify_shard(settings, shard, read))


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


async def _verify_shard(
    settings: Settings, shard: Shard, read: Callable[[int], None]
) -> VerifyResult:
    from aiokafka import TopicPartition  # type: ignore[import-untyped]

    named = {conversation_id.encode() for conversation_id in shard.conversation_ids}
    consumer = await start_consumer(settings)
    ring = None
    try:
        ring = topic_key_ring(settings)
        latest: dict[bytes, bytes | None] = {}
        snapshots = [TopicPartition(settings.topic("snapshots"), p) for p in shard.partitions]
        async for batch in read_partitions_async(consumer, snapshots, settings):
            for record in batch:
                if record.key is not None and (not named or record.key in named):
                    latest[record.key] = record.value
            read(len(batch))
        stored, skipped_snapshots = decode_latest(latest)
        del latest
        verifier = LogVerifier(stored, shard.conversation_ids, ring[0] if ring else None)
        topic = settings.topic("events")
        skipped = 0
        count = len(await partitions_of(consumer, topic))  # where each key's records belong
        events = [TopicPartition(topic, p) for p in shard.partitions]
        async for batch in read_partitions_async(consumer, events, settings):
            for rejected in verifier.feed(log_record(record, count) for record in batch):
                skipped += 1
                log_skipped(topic, rejected.record, rejected.reason, rejected.detail)
            read(len(batch))
        return VerifyResult(verifier.report(), skipped, skipped_snapshots)
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


class _Counted:
    """Counts records read into the count all processes share, and redraws the bar; in
    the process that shows it, also notices a shard process that failed meanwhile."""

    def __init__(
        self,
        counter: Any,
        bar: ProgressBar | None = None,
        check: Callable[[], None] = lambda: None,
    ) -> None:
        self.counter = counter
        self.bar = bar
        self.check = check

    def __call__(self, records: int) -> None:
        with self.counter.get_lock():
            self.counter.value += records
        if self.bar is not None:
            self.bar.update(self.counter.value)
        self.check()


class ShardProcessDied(GoaicoreError):
    """A verify process ended without a report (killed, or out of memory)."""


class _ShardProcesses:
    """Shards verified in processes of their own, each sending its result (or its error)
    back on a pipe; on any error every one still running is stopped."""

    def __init__(self, ctx: Any, counter: Any, settings: Settings, shards: Sequence[Shard]):
        self.counter = counter  # held: a child rebuilds it from this process's copy at start
        self.results: dict[int, VerifyResult] = {}
        self.children = []
        for index, shard in enumerate(shards):
            receiving, sending = ctx.Pipe(duplex=False)
            process = ctx.Process(
                target=_shard_process,
                args=(settings, shard, counter, sending),
                name=f"goaicore-verify-{index + 1}",
                daemon=True,
            )
            self.children.append((shard, process, receiving))

    def run(self, here: Callable[[], VerifyResult]) -> list[VerifyResult]:
        """Start the processes, run ``here`` meanwhile; every result, ``here``'s first."""
        for _, process, _ in self.children:
            process.start()  # first: their start-up overlaps the work here
        try:
            mine = here()
            while len(self.results) < len(self.children):
                self.check(timeout=WAIT_SECONDS)
            return [mine, *(self.results[i] for i in range(len(self.children)))]
        finally:
            for _, process, receiving in self.children:
                if process.is_alive():
                    process.terminate()
                process.join()
                receiving.close()

    def check(self, timeout: float = 0.0) -> None:
        """Take the results sent so far (waiting up to ``timeout`` for one); raise a
        shard's error, or ShardProcessDied for a process gone without a report."""
        waiting = [i for i in range(len(self.children)) if i not in self.results]
        if timeout:  # on the pipes and lives of those still owing a result (a finished
            # one's pipe stays readable at its end, and would never let this wait)
            children = [self.children[i] for i in waiting]
            wait_for_any([c[2] for c in children] + [c[1].sentinel for c in children], timeout)
        for index in waiting:
            shard, process, receiving = self.children[index]
            # Asked before the pipe, once: a process found gone has already sent anything
            # it sent, and one found running that has sent nothing is simply not done.
            alive = process.is_alive()
            if receiving.poll():
                try:
                    outcome = receiving.recv()
                except EOFError:  # its end closed without a result: the process is gone
                    pass
                else:
                    if isinstance(outcome, BaseException):
                        raise outcome
                    self.results[index] = outcome
                    continue
            elif alive:
                continue
            process.join()
            raise ShardProcessDied(
                f"the verify process for partitions {list(shard.partitions)} ended "
                f"(exit code {process.exitcode}) without a report"
            )


def _shard_process(settings: Settings, shard: Shard, counter: Any, sending: Any) -> None:
    """A shard process: log as the command does, verify, send the result or the error."""
    configure_from_environment()
    try:
        outcome: VerifyResult | BaseException = verify_shard(settings, shard, _Counted(counter))
    except Exception as err:  # sent to the parent, which raises it
        outcome = err
    try:
        sending.send(outcome)
    except Exception as err:  # an error that does not pickle: its text
        sending.send(GoaicoreError(f"{type(outcome).__name__}: {outcome} ({err})"))
    finally:
        sending.close()
