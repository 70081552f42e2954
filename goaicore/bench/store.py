"""Fold throughput: the store worker, a bare counting agent, and ``fold`` alone.

Each worker is started and warmed up with one event, then given a few seconds
to settle; then the events are published at once (faster than either worker
consumes them), and the worker is timed from the broker timestamp of its first
output record for them to that of its last (snapshots for the store worker,
marks for the counting agent), so start-up and group rebalances are not
counted. It runs on each benchmarked broker (a fresh one each time), and the
store worker's rate is given as a ratio to the bare agent's on the same broker.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kafka.admin import NewTopic

from goaicore.bench.brokers import PARTITIONS, broker_settings
from goaicore.bench.registry import Measurement, broker_suite
from goaicore.clients import EventPublisher
from goaicore.config import Settings
from goaicore.devstack.worker_process import settings_env
from goaicore.fold import fold
from goaicore.kafka.connection import (
    MissingTopicError,
    make_admin,
    make_consumer,
    topic_partitions,
)
from goaicore.kafka.local import LocalBroker
from goaicore.kafka.partition_reader import read_to_end
from goaicore.kafka.topics import ensure_topics
from goaicore.records import (
    ConversationEvent,
    ConversationSnapshot,
    GameEvent,
    LogPosition,
    UserMessage,
    new_event,
)
from goaicore.records.avro.api import decode_snapshot

EVENTS = 5_000
WARM_UP = b"warm-up"
SETTLE_SECONDS = 5.0
CONVERSATIONS = 200
NOTE = "loopback, one worker process"
COUNTING = "bare Faust agent counting the same records"


def _events() -> list[ConversationEvent]:
    out = []
    for n in range(EVENTS):
        conv = f"conv-{n % CONVERSATIONS}"
        body = GameEvent(kind="tick", text=f"event {n}") if n % 3 else UserMessage(text=f"q {n}")
        out.append(new_event(conv, body, source="bench"))
    return out


def _fold_alone(events: list[ConversationEvent]) -> float:
    table: dict[str, ConversationSnapshot] = {}
    started = time.perf_counter()
    for offset, event in enumerate(events):
        key = event.conversation_id
        table[key] = fold(table.get(key), event, LogPosition(partition=0, offset=offset))
    return len(events) / (time.perf_counter() - started)


Done = Callable[[list[Any]], bool]


def _partitions_once_known(consumer: Any, topic: str, deadline: float) -> list[Any]:
    """The topic's partitions, waiting for a topic created a moment ago to show in metadata."""
    while True:
        try:
            return topic_partitions(consumer, topic)
        except MissingTopicError:
            if time.monotonic() >= deadline:
                raise
            time.sleep(0.2)


def _span_of_outputs(
    settings: Settings,
    topic: str,
    done: Done,
    timeout: float,
    counted: Callable[[Any], bool] = lambda record: True,
) -> float:
    """Seconds between the first and last counted output timestamps once ``done(records)``."""
    consumer = make_consumer(settings)
    deadline = time.monotonic() + timeout
    records: list[Any] = []
    try:
        partitions = _partitions_once_known(consumer, topic, deadline)
        ends = dict.fromkeys(partitions, 0)
        while time.monotonic() < deadline:
            for partition in partitions:  # read on from where the last look ended
                for record in read_to_end(consumer, partition, ends[partition], settings):
                    records.append(record)
                    ends[partition] = record.offset + 1
            if done(records):
                stamps = [r.timestamp for r in records if counted(r)]
                span: float = (max(stamps) - min(stamps)) / 1000
                return span
            time.sleep(0.5)
    finally:
        consumer.close()
    raise TimeoutError(f"{topic} was not complete in {timeout:.0f} s")


def _all_folded(last_offsets: dict[bytes, int]) -> Done:
    """Done when every conversation's latest snapshot has applied its last event."""
    folded: dict[bytes, int] = {}
    read = [0]

    def done(records: list[Any]) -> bool:
        for record in records[read[0] :]:
            position = decode_snapshot(record.value).last_position
            if position is not None:
                folded[record.key] = max(folded.get(record.key, -1), position.offset)
        read[0] = len(records)
        return all(folded.get(k, -1) >= offset for k, offset in last_offsets.items())

    return done


def _run_worker(
    command: list[str],
    settings: Settings,
    topic: str,
    events: list[ConversationEvent],
    done_after: Callable[[dict[bytes, int]], Done],
    counted: Callable[[Any], bool],
) -> float:
    """Start a worker, warm it up, then time how it handles ``events`` published at once.

    The warm-up event is published first and the worker is given time to settle,
    so the group's start-up rebalances fall outside the measured span.
    """
    with open(settings.data_dir / "worker.log", "ab") as log:
        process = subprocess.Popen(command, env=settings_env(settings), stdout=log, stderr=log)
    try:
        with EventPublisher(settings) as publisher:
            publisher.user_message(WARM_UP.decode(), "warm up")
            _span_of_outputs(settings, topic, lambda records: bool(records), timeout=300)
            time.sleep(SETTLE_SECONDS)
            positions = publisher.publish_many((e.conversation_id, e) for e in events)
        last = {
            e.conversation_id.encode(): p.offset for e, p in zip(events, positions, strict=True)
        }
        return _span_of_outputs(settings, topic, done_after(last), 600, counted)
    finally:
        process.terminate()
        process.wait(60)


@broker_suite("store")
def store(broker: LocalBroker) -> list[Measurement]:
    events = _events()
    rows = [
        Measurement(
            "store",
            "fold alone (the ceiling)",
            _fold_alone(events),
            "events/s",
            {"events": EVENTS, "conversations": CONVERSATIONS},
            "one process, no I/O",
        )
    ]
    with tempfile.TemporaryDirectory() as tmp:
        for name in ("fold", "count"):
            settings = broker_settings(broker, f"bench-{name}", Path(tmp) / name)
            settings.data_dir.mkdir(parents=True)
            ensure_topics(settings)
            if name == "fold":
                span = _run_worker(
                    [sys.executable, "-m", "goaicore", "worker"],
                    settings,
                    settings.topic("snapshots"),
                    events,
                    _all_folded,
                    lambda record: record.key != WARM_UP,
                )
                label = "store worker: events folded into snapshots"
            else:
                admin = make_admin(settings)
                admin.create_topics([NewTopic(settings.topic("bench-count"), 1, 1)])
                admin.close()
                span = _run_worker(
                    [
                        sys.executable,
                        "-m",
                        "goaicore.bench.counting_app",
                        "--expect",
                        str(EVENTS + 1),
                    ],
                    settings,
                    settings.topic("bench-count"),
                    events,
                    lambda last: lambda records: len(records) >= 3,
                    lambda record: record.value != b"1",  # the warm-up's mark
                )
                label = COUNTING
            rows.append(
                Measurement(
                    "store",
                    label,
                    EVENTS / max(span, 1e-3),
                    "events/s",
                    {"events": EVENTS, "partitions": PARTITIONS},
                    NOTE,
                    baseline=COUNTING if name == "fold" else None,
                )
            )
    return rows
