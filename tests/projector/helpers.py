"""Publish conversations, fold them as the store worker does, run the projector."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from goaicore.clients import EventPublisher
from goaicore.config import Settings
from goaicore.devstack.worker_process import settings_env
from goaicore.fold import fold
from goaicore.kafka.connection import make_consumer, make_producer
from goaicore.kafka.dead_letters import DeadLetter
from goaicore.kafka.partition_reader import read_to_end
from goaicore.projection.db import connect
from goaicore.projection.projector import Projector
from goaicore.records import ChatReply, ConversationEvent, ConversationSnapshot, LogPosition
from goaicore.records.avro.api import encode_chat_reply, encode_snapshot


def publish(
    settings: Settings, events: Sequence[ConversationEvent]
) -> list[tuple[ConversationEvent, LogPosition]]:
    """Publish events in order; each with the log position it got."""
    with EventPublisher(settings, source="test") as publisher:
        positions = publisher.publish_many((e.conversation_id, e) for e in events)
    return [
        (event, LogPosition(partition=p.partition, offset=p.offset))
        for event, p in zip(events, positions, strict=True)
    ]


def fold_logged(
    logged: Sequence[tuple[ConversationEvent, LogPosition]],
) -> dict[str, ConversationSnapshot]:
    """The snapshots the store worker would write for these logged events."""
    table: dict[str, ConversationSnapshot] = {}
    for event, position in logged:
        table[event.conversation_id] = fold(table.get(event.conversation_id), event, position)
    return table


def publish_snapshots(settings: Settings, snapshots: Sequence[ConversationSnapshot]) -> None:
    """Write snapshots to the snapshots topic as the store worker does (Avro, keyed by id)."""
    produce(
        settings,
        "snapshots",
        [(s.conversation_id.encode(), encode_snapshot(s)) for s in snapshots],
    )


def produce(settings: Settings, topic: str, records: Sequence[tuple[bytes, bytes | None]]) -> None:
    """Raw records (key, value) to one of the prefix's topics."""
    producer = make_producer(settings)
    try:
        for key, value in records:
            producer.send(settings.topic(topic), key=key, value=value)
        producer.flush(30)
    finally:
        producer.close()


def produce_at(
    settings: Settings,
    topic: str,
    records: Sequence[tuple[bytes | None, bytes | None]],
    timestamp_ms: int | None = None,
    headers: Sequence[tuple[str, bytes]] = (),
) -> list[LogPosition]:
    """Raw records to one of the prefix's topics, with a record time and headers; their
    positions."""
    producer = make_producer(settings)
    try:
        futures = [
            producer.send(
                settings.topic(topic),
                key=key,
                value=value,
                timestamp_ms=timestamp_ms,
                headers=list(headers),
            )
            for key, value in records
        ]
        sent = [future.get(30) for future in futures]
    finally:
        producer.close()
    return [LogPosition(partition=m.partition, offset=m.offset) for m in sent]


def bad_events(
    settings: Settings, records: Sequence[tuple[bytes | None, bytes | None]], reason: str
) -> list[LogPosition]:
    """Bad records published to ``events`` and set aside as the store worker sets them
    aside (the projector only counts bad events: their dead letter is the worker's),
    for tests that run a projector without a worker; their positions."""
    from types import SimpleNamespace

    from goaicore.kafka.dead_letters import DeadLetterWriter

    positions = produce_at(settings, "events", records)
    with DeadLetterWriter(settings, f"{settings.topic_prefix}.store") as writer:
        for (key, value), at in zip(records, positions, strict=True):
            record = SimpleNamespace(
                topic=settings.topic("events"),
                partition=at.partition,
                offset=at.offset,
                key=key,
                value=value,
            )
            writer.forward(record, reason, "not an event")
    return positions


def publish_replies(
    settings: Settings, replies: Sequence[ChatReply], timestamp_ms: int | None = None
) -> list[LogPosition]:
    """Replies as the store worker publishes them (Avro, keyed by conversation id)."""
    return produce_at(
        settings,
        "replies",
        [(r.conversation_id.encode(), encode_chat_reply(r)) for r in replies],
        timestamp_ms,
    )


def read_topic(settings: Settings, topic: str) -> list[Any]:
    """Every record of one of the prefix's topics, partition by partition."""
    from goaicore.kafka.connection import topic_partitions
    from goaicore.kafka.partition_reader import read_to_end

    consumer = make_consumer(settings)
    try:
        return [
            record
            for partition in topic_partitions(consumer, settings.topic(topic))
            for record in read_to_end(consumer, partition, settings=settings)
        ]
    finally:
        consumer.close()


def project(settings: Settings, timeout: float = 60.0, **options: Any) -> Projector:
    """Run a projector in this process until it has caught up, then stop it."""
    projector = Projector(settings, **options).start()
    try:
        projector.drain(timeout)
    finally:
        projector.close()
    return projector


def query(settings: Settings, text: str, *params: Any) -> list[tuple[Any, ...]]:
    with connect(settings) as conn:
        return conn.execute(text, params).fetchall()


class ProjectorProcess:
    """``goaicore projector`` as a child process, its output in a log file."""

    def __init__(self, settings: Settings, *args: str, name: str = "projector") -> None:
        self.settings = settings
        self.args = args
        self.log_path: Path = settings.data_dir / f"{name}.log"
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> ProjectorProcess:
        env = {**settings_env(self.settings), "GOAICORE_DB_SCHEMA": self.settings.db_schema}
        with open(self.log_path, "ab") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "goaicore", "projector", *self.args],
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
            )
        return self

    def wait(self, timeout: float = 60) -> int:
        assert self.process is not None
        return self.process.wait(timeout)

    def stop(self) -> int:
        if self.process is None or self.process.poll() is not None:
            return self.process.returncode if self.process else 0
        self.process.send_signal(signal.SIGTERM)
        try:
            return self.process.wait(30)
        except subprocess.TimeoutExpired:
            os.kill(self.process.pid, signal.SIGKILL)
            return self.process.wait(30)

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")


def all_dead_letters(settings: Settings) -> list[DeadLetter]:
    """Every record of the dead-letter topic, read to its end."""
    from goaicore.kafka.connection import make_consumer, topic_partitions

    consumer = make_consumer(settings)
    try:
        return [
            DeadLetter.from_record(record)
            for partition in topic_partitions(consumer, settings.topic("dead-letters"))
            for record in read_to_end(consumer, partition, settings=settings)
        ]
    finally:
        consumer.close()
