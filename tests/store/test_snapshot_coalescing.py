"""Coalesced snapshot writes: a backlog's conversations are written once per interval,
never wrong, and an idle worker's snapshot is written without waiting for it."""

from __future__ import annotations

import base64
import random
from collections import Counter

import pytest
from kafka import KafkaConsumer, TopicPartition

from goaicore.clients import EventPublisher, HistoryReader
from goaicore.config import Settings
from goaicore.kafka import ensure_topics
from goaicore.kafka.partition_reader import read_to_end
from goaicore.records import GameEvent
from goaicore.records.avro.api import decode_snapshot
from goaicore.replay.verify import verify_snapshot
from tests.cli import run_goaicore
from tests.store.workers import StoreWorker, wait_folded, worker_env

# Events of 24 KiB of random text (18 KiB compressed): a fetch (1 MiB a partition)
# holds about 57 of a partition's, so with about 67 conversations a partition (200
# over 3) a fetch touches each at most once, and writing each fetch's snapshots would
# write one snapshot per event.
CONVERSATIONS, EACH, RANDOM_BYTES = 200, 3, 18 * 1024


def noise(rng: random.Random) -> str:
    """Text that does not compress (compressed, the events would all fit one fetch)."""
    return base64.b64encode(rng.randbytes(RANDOM_BYTES)).decode()


def snapshot_records(settings: Settings) -> list[tuple[bytes, bytes]]:
    """Every record of the snapshots topic so far (key, value), in each partition's order."""
    consumer = KafkaConsumer(bootstrap_servers=settings.require_bootstrap())
    records: list[tuple[bytes, bytes]] = []
    try:
        for p in range(settings.partitions):
            partition = TopicPartition(settings.topic("snapshots"), p)
            for record in read_to_end(consumer, partition, settings=settings):
                records.append((record.key, record.value))
    finally:
        consumer.close()
    return records


@pytest.mark.parametrize(
    ("flush_ms", "flush_bytes", "held_back"),
    [(5000, 1 << 30, True), (60_000, 64 * 1024, False)],
    ids=["coalesced-for-5s", "byte-bound-of-64KiB"],
)
def test_a_backlog_writes_each_conversation_once_per_interval_and_folds_it_right(
    settings: Settings, flush_ms: int, flush_bytes: int, held_back: bool
) -> None:
    """Under the byte bound, a few of these snapshots are enough to write them all at
    once, whatever the interval: about one write per fetch again."""
    coalesced = settings.with_overrides(
        snapshot_flush_ms=flush_ms, snapshot_flush_bytes=flush_bytes
    )
    ensure_topics(coalesced)
    events = CONVERSATIONS * EACH
    rng = random.Random(7)
    with EventPublisher(coalesced) as publisher:  # the whole backlog before the worker starts
        positions = publisher.publish_many(
            (f"c{n % CONVERSATIONS}", GameEvent(kind="tick", text=noise(rng)))
            for n in range(events)
        )
    last = {f"c{n % CONVERSATIONS}": positions[n].offset for n in range(events)}
    worker = StoreWorker(coalesced).start()
    try:
        stored = wait_folded(coalesced, last, timeout=240, workers=(worker,))
    finally:
        assert worker.stop() == 0, worker.log()[-4000:]

    written = Counter(key.decode() for key, _ in snapshot_records(coalesced))
    assert set(written) == set(last)
    if held_back:  # the byte bound is more than all of them: the interval rules
        assert sum(written.values()) < events // 2, f"{sum(written.values())} written"
    else:
        assert sum(written.values()) > events // 2, f"{sum(written.values())} written"
    assert {s.event_count for s in stored.values()} == {EACH}
    with HistoryReader(coalesced) as history:
        assert all(verify_snapshot(history, s) == [] for s in stored.values())
    verify = run_goaicore("verify", env=worker_env(coalesced), timeout=300)
    assert verify.returncode == 0, verify.stdout + verify.stderr
    assert f"verified {CONVERSATIONS} snapshots: {CONVERSATIONS} equal, 0 different" in (
        verify.stdout
    )


def test_an_idle_worker_writes_a_snapshot_without_waiting_for_the_interval(
    settings: Settings,
) -> None:
    """The interval is a minute and no bound is near: a snapshot appears only because the
    worker has read its partitions to their end, each event's once."""
    idle = settings.with_overrides(snapshot_flush_ms=60_000, snapshot_flush_bytes=1 << 30)
    ensure_topics(idle)
    worker = StoreWorker(idle).start()
    try:
        with EventPublisher(idle) as publisher:  # once this is folded, the worker is running
            ready = publisher.game_event("warm-up", "ready?", kind="tick")
        wait_folded(idle, {"warm-up": ready.offset}, workers=(worker,))
        for n, text in enumerate(("first", "second")):
            with EventPublisher(idle) as publisher:
                sent = publisher.game_event("alone", text, kind="tick")
            stored = wait_folded(idle, {"alone": sent.offset}, timeout=45, workers=(worker,))
            assert stored["alone"].event_count == n + 1
            assert stored["alone"].messages[-1].text == text
            records = [v for k, v in snapshot_records(idle) if k == b"alone"]
            assert len(records) == n + 1  # one write for each event, each at once
            assert decode_snapshot(records[-1]) == stored["alone"]
    finally:
        assert worker.stop() == 0, worker.log()[-4000:]
