"""One worker's scale: many conversations, its memory, and its restart, per table store.

For each table store (``memory``, the default, and ``rocksdb``), on topics of its
own: every event is published first (each conversation's together, as a session
played through; the store suite measures interleaved conversations), then one
store worker is started and timed until its group has committed the end of every
events partition (folded, its snapshots written); its resident memory is read
then. The worker is stopped and started again, one event is published to each
partition, and the time until those are committed is the restart: start-up, table
recovery (the whole changelog for ``memory``, the tail after the offsets RocksDB
kept for ``rocksdb``) and a first fold. RocksDB's rows are compared with the
in-memory table's.

The embedded broker holds every record in memory, so it gets a tenth of the shape.
"""

from __future__ import annotations

import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from goaicore.bench.brokers import broker_settings
from goaicore.bench.registry import Measurement, broker_suite
from goaicore.bench.store import WORKER_PROCESS, Shape
from goaicore.clients import EventPublisher
from goaicore.devstack.worker_process import settings_env
from goaicore.extras import needs
from goaicore.kafka.connection import (
    make_admin,
    make_consumer,
    topic_partitions,
)
from goaicore.kafka.local import LocalBroker
from goaicore.kafka.partitioner import partition_for
from goaicore.kafka.topics import ensure_topics
from goaicore.records import GameEvent, UserMessage, new_event
from goaicore.settings import Settings, TableStore

with needs("kafka"):
    from kafka.errors import KafkaError

SCALE = Shape(100_000, 20)
EMBEDDED_SCALE = Shape(10_000, 20)
STORES: tuple[TableStore, ...] = ("memory", "rocksdb")
CHUNK = 50_000  # events published at a time
TIMEOUT = 3 * 3600.0
NOTE = "loopback, one worker process"
FOLD = "store worker catching up: every event folded and committed"
RSS = "store worker resident memory once folded"
RESTART = "restart: start, table recovered, an event per partition folded"
RSS_AFTER = "store worker resident memory after the restart"
ON_DISK = "table on disk (RocksDB folders)"


def _events(shape: Shape) -> Iterator[tuple[str, Any]]:
    """``shape``'s events, each conversation's together (a session played through)."""
    for c in range(shape.conversations):
        conv = f"conv-{c}"
        for n in range(shape.each):
            text = f"event {n} of {conv}"
            body = GameEvent(kind="tick", text=text) if n % 3 else UserMessage(text=text)
            yield conv, new_event(conv, body, source="bench")


def _publish(settings: Settings, items: Iterator[tuple[str, Any]]) -> int:
    count = 0
    with EventPublisher(settings) as publisher:
        while chunk := [item for _, item in zip(range(CHUNK), items, strict=False)]:
            publisher.publish_many(chunk, timeout=600)
            count += len(chunk)
    return count


def _one_per_partition(settings: Settings) -> Iterator[tuple[str, Any]]:
    """An event for a conversation in each partition (by trying names until all are hit)."""
    seen: set[int] = set()
    n = 0
    while len(seen) < settings.partitions:
        conv = f"restart-{n}"
        partition = partition_for(conv, settings.partitions)
        if partition not in seen:
            seen.add(partition)
            yield conv, new_event(conv, UserMessage(text="after the restart"), source="bench")
        n += 1


def _wait_committed(settings: Settings, worker: subprocess.Popen[bytes]) -> None:
    """Until the worker's group has committed the end of every events partition."""
    consumer = make_consumer(settings)
    admin = make_admin(settings)
    group = f"{settings.topic_prefix}.store"  # the worker's app id (goaicore_store.topology)
    deadline = time.monotonic() + TIMEOUT
    try:
        partitions = topic_partitions(consumer, settings.topic("events"))
        ends = consumer.end_offsets(partitions)
        while time.monotonic() < deadline:
            if worker.poll() is not None:
                raise RuntimeError(f"the store worker exited with {worker.returncode}")
            try:
                committed = admin.list_group_offsets({group: partitions}).get(group, {})
            except KafkaError:  # no coordinator yet: the group is only now being formed
                committed = {}
            if all(
                (done := committed.get(tp)) is not None and done.offset >= ends[tp]
                for tp in partitions
            ):
                return
            time.sleep(0.25)
    finally:
        consumer.close()
        admin.close()
    raise TimeoutError(f"the store worker did not fold every event in {TIMEOUT:.0f} s")


def _start(settings: Settings, log: Path) -> subprocess.Popen[bytes]:
    with open(log, "ab") as out:
        return subprocess.Popen(
            WORKER_PROCESS.command(settings, 0),
            env=settings_env(settings),
            stdout=out,
            stderr=out,
        )


def _stop(worker: subprocess.Popen[bytes]) -> None:
    worker.send_signal(signal.SIGTERM)
    try:
        worker.wait(120)
    except subprocess.TimeoutExpired:
        worker.kill()
        worker.wait(30)


def _rss_mib(worker: subprocess.Popen[bytes]) -> float:
    import psutil

    return float(psutil.Process(worker.pid).memory_info().rss) / 2**20


def _size_mib(folder: Path) -> float:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file()) / 2**20


def _measure(settings: Settings, shape: Shape) -> dict[str, float]:
    published = _publish(settings, _events(shape))
    log = settings.data_dir / "worker.log"
    started = time.perf_counter()
    worker = _start(settings, log)
    try:
        _wait_committed(settings, worker)
        figures = {FOLD: published / (time.perf_counter() - started), RSS: _rss_mib(worker)}
    finally:
        _stop(worker)
    started = time.perf_counter()
    worker = _start(settings, log)
    try:
        _publish(settings, _one_per_partition(settings))
        _wait_committed(settings, worker)
        figures[RESTART] = time.perf_counter() - started
        figures[RSS_AFTER] = _rss_mib(worker)
    finally:
        _stop(worker)
    if settings.table_store == "rocksdb":
        figures[ON_DISK] = _size_mib(settings.data_dir / "store")
    return figures


UNITS = {FOLD: "events/s", RSS: "MiB", RESTART: "s", RSS_AFTER: "MiB", ON_DISK: "MiB"}


@broker_suite("scale")
def scale(broker: LocalBroker) -> list[Measurement]:
    shape = SCALE if broker.kind == "kafka" else EMBEDDED_SCALE
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for store in STORES:
            settings = broker_settings(
                broker, f"scale-{store}", Path(tmp) / store, table_store=store
            )
            settings.data_dir.mkdir(parents=True)
            ensure_topics(settings)
            for name, value in _measure(settings, shape).items():
                baseline = f"{name} (memory)" if store != "memory" else None
                rows.append(
                    Measurement(
                        "scale",
                        f"{name} ({store})",
                        value,
                        UNITS[name],
                        shape.params,
                        NOTE,
                        baseline=baseline,
                    )
                )
    return rows
