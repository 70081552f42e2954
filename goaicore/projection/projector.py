"""The projector: ``events``, ``snapshots``, ``replies`` and ``dead-letters`` into
PostgreSQL, every row exactly once.

It reads every partition of these topics by assignment: Kafka's committed offsets
are never the truth here. Its positions live in ``projector_positions`` and move
in the same transaction as the rows, and on start it seeks to them, so a crash at
any moment neither loses nor repeats a row. After each PostgreSQL commit it also
commits those positions to the consumer group ``<prefix>.projector``, for lag
tools (kafka-consumer-groups, exporters) to see; they are informational only.

One projector writes a schema at a time: it holds a session advisory lock on its
connection, and a second one waits as a standby until the first stops.
Records that do not decode are skipped and their position advances. Each bad
record has one writer of its dead letter: a record of ``events`` is the store
worker's (it reads every record of its partitions and sets it aside), so the
projector only counts and logs the ones it skips (``skipped``); a record of
``snapshots`` or ``replies``, or a row PostgreSQL refuses, is the projector's: it
goes to the dead-letter topic (a crash or a failed write before the commit can send
one twice; each carries its origin topic, partition and offset). The projector
reads the dead letters back like any record, into ``dead_letters``; a dead letter
itself is never set aside, so nothing loops.

Writing one batch overlaps reading and decoding the next: PostgreSQL indexes
a batch (most of a write's time is the server's) while this process reads the
following one. Batches are still written one at a time, in log order. The writer
thread wakes each time PostgreSQL has taken what was sent and needs the
interpreter lock to send more; at Python's default switch interval (5 ms) it
waited so long that PostgreSQL waited too (about 30% fewer events per second), so
a running projector shortens the interval (``SWITCH_INTERVAL``) and restores it on
close.
"""

from __future__ import annotations

import logging
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import psycopg
from opentelemetry.trace import Link, get_current_span

from goaicore.extras import needs
from goaicore.fold.records import Rejected
from goaicore.kafka.dead_letters import DeadLetterWriter
from goaicore.kafka.threaded_consumer import ThreadedConsumer
from goaicore.lifecycle import Running
from goaicore.logs import origin
from goaicore.projection.batch import (
    Batch,
    ProjectedTopics,
    TopicPartitionKey,
    build_batch,
    set_aside,
)
from goaicore.projection.db import Connection, PositionConflictError, connect, lock_key
from goaicore.projection.migrations import migrate
from goaicore.projection.writer import load_positions, write_batch
from goaicore.sealing.keyring import KeyRing, TopicKeys, topic_key_ring
from goaicore.settings import Settings
from goaicore.stopping import StopFlag
from goaicore.tracing import context_of, tracer

with needs("kafka"):
    from aiokafka import TopicPartition  # type: ignore[import-untyped]
    from aiokafka.errors import KafkaError  # type: ignore[import-untyped]

log = logging.getLogger(__name__)

CONSUMER_NAME = "goaicore-projector"


TRACER = tracer(__name__)
MAX_LINKS = 64  # traces one batch span links to


def trace_links(polled: Mapping[Any, Sequence[Any]]) -> list[Link]:
    """Links to the traces the polled records carry, one per trace, at most MAX_LINKS."""
    seen: dict[int, Link] = {}
    for records in polled.values():
        for record in records:
            if len(seen) >= MAX_LINKS:
                return list(seen.values())
            span_context = get_current_span(context_of(record.headers)).get_span_context()
            if span_context.is_valid and span_context.trace_id not in seen:
                seen[span_context.trace_id] = Link(span_context)
    return list(seen.values())


def group_id(settings: Settings) -> str:
    """The consumer group the projector reports its positions under (never reads from)."""
    return f"{settings.topic_prefix}.projector"


@dataclass(frozen=True)
class BatchWritten:
    """One committed batch: how many rows, and how long its write took."""

    events: int
    snapshots: int
    seconds: float
    replies: int = 0
    dead_letters: int = 0


DEFAULT_BATCH = 2000
SWITCH_INTERVAL = 0.0005  # seconds; Python's default is 0.005


class _ShortSwitchInterval:
    """Python's switch interval at :data:`SWITCH_INTERVAL` while any projector of this
    process runs; the interval found before the first is restored after the last."""

    _lock = threading.Lock()
    _running = 0
    _saved = 0.0

    @classmethod
    def enter(cls) -> None:
        with cls._lock:
            if cls._running == 0:
                cls._saved = sys.getswitchinterval()
                sys.setswitchinterval(min(cls._saved, SWITCH_INTERVAL))
            cls._running += 1

    @classmethod
    def leave(cls) -> None:
        with cls._lock:
            cls._running -= 1
            if cls._running == 0:
                sys.setswitchinterval(cls._saved)


class Projector(Running):
    """Project one topic prefix into one PostgreSQL schema; a context manager.

    ``crash_after_write_before_commit=N`` is a fault hook for tests: the process
    kills itself (SIGKILL) after writing its N-th batch and before committing it.
    """

    def __init__(
        self,
        settings: Settings,
        batch_size: int = DEFAULT_BATCH,
        crash_after_write_before_commit: int | None = None,
        on_batch: Callable[[BatchWritten], None] | None = None,
    ) -> None:
        """``on_batch`` is called (on the writer thread) after each batch's commit."""
        self.settings = settings
        self.on_batch = on_batch
        self.batch_size = batch_size
        self.topics = ProjectedTopics.of(settings)
        self.events_topic = self.topics.events
        self.snapshots_topic = self.topics.snapshots
        self.positions: dict[TopicPartitionKey, int] = {}
        self.projected = 0
        self.dead_lettered = 0
        self.skipped: dict[str, int] = {}
        """Records of ``events`` skipped undecoded, by reason: the worker dead-letters them."""
        self._crash_at = crash_after_write_before_commit
        self._batches_written = 0
        self._conn: Connection | None = None
        self._consumer: ThreadedConsumer | None = None
        self._partitions: list[Any] = []
        self._dead_letters: DeadLetterWriter | None = None
        self._writer: ThreadPoolExecutor | None = None
        self._in_flight: Future[None] | None = None
        self._short_switch = False  # this projector keeps the switch interval short
        self._reported: dict[TopicPartitionKey, int] = {}  # positions committed to the group
        self.standby = False  # waiting for another projector of the schema to stop
        ring = topic_key_ring(settings)  # opens sealed events (GOAICORE_MASTER_KEYS)
        self._keys: KeyRing | None = ring[0] if ring else None
        self._key_topic: TopicKeys | None = ring[1] if ring else None

    @property
    def conn(self) -> Connection:
        if self._conn is None:
            raise RuntimeError("start() the projector first")
        return self._conn

    def start(self, stop: StopFlag | None = None) -> Projector:
        """Migrate, take the schema's lock (waiting as a standby), seek to stored positions."""
        self._conn = connect(self.settings)
        applied = migrate(self._conn, self.settings.db_schema)
        if applied:
            log.info("schema %s: applied migrations %s", self.settings.db_schema, applied)
        if not self._take_lock(stop):
            return self
        self._consumer = ThreadedConsumer(
            self.settings,
            CONSUMER_NAME,
            group_id=group_id(self.settings),  # for commits only: partitions are assigned
            auto_offset_reset="earliest",
        )
        self._partitions = [
            tp for topic in self.topics.names for tp in self._consumer.partitions(topic)
        ]
        self.positions = load_positions(
            self._conn, [(tp.topic, tp.partition) for tp in self._partitions]
        )
        self._consumer.assign_at(self._stored_positions())
        self._dead_letters = DeadLetterWriter(self.settings, CONSUMER_NAME)
        self._writer = ThreadPoolExecutor(1, thread_name_prefix="goaicore-projector-writer")
        if not self._short_switch:
            _ShortSwitchInterval.enter()
            self._short_switch = True
        log.info(
            "projecting %s (%d partitions) into schema %s from %s",
            ", ".join(self.topics.names),
            len(self._partitions),
            self.settings.db_schema,
            self.positions,
        )
        return self

    def _take_lock(self, stop: StopFlag | None) -> bool:
        key = lock_key(f"goaicore.projector:{self.settings.db_schema}")
        waited = 0.0
        while True:
            row = self.conn.execute("SELECT pg_try_advisory_lock(%s)", (key,)).fetchone()
            if row is not None and row[0]:
                self.standby = False
                return True
            self.standby = True
            if waited % 30 == 0:
                log.info("another projector writes schema %s; waiting", self.settings.db_schema)
            if stop is not None and stop.wait(1.0):
                return False
            if stop is None:
                time.sleep(1.0)
            waited += 1

    @property
    def started(self) -> bool:
        return self._consumer is not None

    @property
    def consumer(self) -> ThreadedConsumer:
        if self._consumer is None:
            raise RuntimeError("start() the projector first")
        return self._consumer

    @property
    def _events_partitions(self) -> int:
        """How many partitions ``events`` has: where each key's records belong."""
        return sum(1 for tp in self._partitions if tp.topic == self.topics.events)

    def _stored_positions(self) -> dict[Any, int]:
        return {tp: self.positions[(tp.topic, tp.partition)] for tp in self._partitions}

    def step(self, timeout_ms: int = 200) -> int:
        """Poll once and hand what came in to the writer as one transaction; the number of records.

        The previous batch's write finishes (or raises) before this one's records are set
        aside or handed over. Whatever fails, the reader is moved back to the positions
        written last, so a caller that steps on skips nothing.
        """
        if self._writer is None:
            raise RuntimeError("start() the projector first")
        try:
            polled = self.consumer.poll(timeout_ms, self.batch_size)
        except KafkaError as err:  # a retriable one passes once the broker answers again
            if not err.retriable:
                raise
            log.warning("no broker answers (%s); polling again", err)
            time.sleep(min(timeout_ms, 1000) / 1000)
            return 0
        try:
            batch = (
                build_batch(polled, self.topics, self._keys, self._events_partitions)
                if polled
                else None
            )
        except BaseException:
            self._finish_quietly()
            self._rewind()
            raise
        self.flush()
        self._report_positions()
        if batch is None:
            return 0
        try:
            for rejected in batch.rejected:
                if rejected.record.origin.topic == self.events_topic:
                    self._skip(rejected)
                else:
                    self._dead_letter(rejected)
        except BaseException:
            self._rewind()
            raise
        self._in_flight = self._writer.submit(self._write, batch, polled)
        return batch.records

    def flush(self) -> None:
        """Wait until every batch read so far is written; raise the write's error, if any
        (and move the reader back to the positions written last)."""
        in_flight, self._in_flight = self._in_flight, None
        if in_flight is None:
            return
        try:
            in_flight.result()
        except BaseException:
            if in_flight.done():  # not an interrupt while the write still runs
                self._rewind()
            raise

    def _finish_quietly(self) -> None:
        """Wait for the write in flight when another error is on its way out."""
        try:
            self.flush()
        except Exception:
            log.exception("the write in flight failed too")

    def _report_positions(self) -> None:
        """Commit the positions written since the last report to the consumer group.

        Asynchronously, from the reading thread (the consumer's own). Informational only,
        so it never stops the projector: a failed report is logged, and the next step
        reports again.
        """
        moved = {key: at for key, at in self.positions.items() if self._reported.get(key) != at}
        if not moved:
            return
        offsets = {TopicPartition(topic, partition): at for (topic, partition), at in moved.items()}
        self.consumer.commit_soon(offsets, self._not_reported(moved))
        self._reported.update(moved)

    def _not_reported(self, moved: dict[TopicPartitionKey, int]) -> Callable[[BaseException], None]:
        """What a failed report does: log it, and report these positions again next step
        (no coordinator while the broker is away)."""

        def failed(err: BaseException) -> None:
            log.warning("could not report positions to the consumer group: %s", err)
            for key, at in moved.items():
                if self._reported.get(key) == at:
                    self._reported.pop(key, None)

        return failed

    def lag(self) -> dict[TopicPartitionKey, int]:
        """Per partition, the records the fetches report that are not written yet; a
        partition not fetched from yet is left out."""
        out: dict[TopicPartitionKey, int] = {}
        for tp, (_, highwater) in self.consumer.read_to(self._partitions).items():
            if highwater is not None:
                key = (tp.topic, tp.partition)
                out[key] = max(int(highwater) - self.positions.get(key, 0), 0)
        return out

    def _rewind(self) -> None:
        self.consumer.seek(self._stored_positions())

    def _write(self, batch: Batch, polled: Mapping[Any, Sequence[Any]]) -> None:
        """Write one batch in one transaction: a ``projector.batch`` span linked to the
        traces its records carry (read from their headers only when the span records)."""
        with TRACER.start_as_current_span(
            "projector.batch",
            attributes={
                "goaicore.events": len(batch.events),
                "goaicore.snapshots": len(batch.snapshots),
                "goaicore.replies": len(batch.replies),
                "goaicore.dead_letters": len(batch.dead_letters),
            },
        ) as span:
            if span.is_recording():
                for link in trace_links(polled):
                    span.add_link(link.context)
            self._write_batch(batch)

    def _write_batch(self, batch: Batch) -> None:
        started = time.perf_counter()
        try:
            write_batch(self.conn, batch, self.positions, self._before_commit)
        except psycopg.errors.UniqueViolation as err:
            raise PositionConflictError(
                f"a row of this batch is already projected ({err.diag.message_detail}): the "
                "log and the projection disagree (was a topic recreated?); run "
                f"`goaicore projection clear --schema {self.settings.db_schema} --prefix "
                f"{self.settings.topic_prefix}` to project the log again, or use another "
                "GOAICORE_DB_SCHEMA"
            ) from err
        except psycopg.DataError as err:
            log.warning("PostgreSQL refused a batch (%s); writing it row by row", err)
            write_batch(
                self.conn,
                batch,
                self.positions,
                self._before_commit,
                row_by_row=True,
                on_refused=lambda record, why: self._dead_letter(
                    set_aside(record, "refused-by-database", why)
                ),
            )
        self.positions.update(batch.positions)
        self.projected += batch.rows
        if self.on_batch is not None:
            seconds = time.perf_counter() - started
            self.on_batch(
                BatchWritten(
                    len(batch.events),
                    len(batch.snapshots),
                    seconds,
                    len(batch.replies),
                    len(batch.dead_letters),
                )
            )

    def _before_commit(self) -> None:
        self._batches_written += 1
        if self._crash_at is not None and self._batches_written >= self._crash_at:
            log.warning("fault hook: killed after writing batch %d, before commit", self._crash_at)
            os.kill(os.getpid(), signal.SIGKILL)

    def _skip(self, refused: Rejected) -> None:
        """A record of ``events`` that is no row: counted and logged, never a dead letter
        here (the store worker, which reads every record of ``events``, writes it)."""
        record = refused.record.origin
        self.skipped[refused.reason] = self.skipped.get(refused.reason, 0) + 1
        log.warning(
            "skipped %s[%d]@%d: %s (its dead letter is the store worker's)",
            record.topic,
            record.partition,
            record.offset,
            refused.reason,
            extra=origin(record),
        )

    def _dead_letter(self, refused: Rejected) -> None:
        if self._dead_letters is None:
            raise RuntimeError("start() the projector first")
        # Never two at once: the writer thread sets aside refused rows during a write,
        # and ``step`` sets aside undecodable records only once no write is in flight.
        record = refused.record.origin
        self._dead_letters.forward(record, refused.reason, refused.detail)
        self.dead_lettered += 1
        log.warning(
            "dead letter from %s[%d]@%d: %s",
            record.topic,
            record.partition,
            record.offset,
            refused.reason,
            extra=origin(record),
        )

    def caught_up(self, floor: dict[Any, int] | None = None) -> bool:
        """True when every partition is read up to its high watermark (from fetches) and to
        its offset in ``floor``, and everything read is written: when read that far, it
        waits for the write in flight and raises its error, as :meth:`flush` does."""
        for tp, (position, highwater) in self.consumer.read_to(self._partitions).items():
            if highwater is None or position < max(highwater, (floor or {}).get(tp, 0)):
                return False
        self.flush()
        return True

    def drain(self, timeout: float = 60.0) -> None:
        """Project until caught up with every partition: at least what was published when
        this call began, and as far as the fetches report."""
        deadline = time.monotonic() + timeout
        published = {
            tp: int(end or 0) for tp, end in self.consumer.end_offsets(self._partitions).items()
        }
        # Short polls: a partition's high watermark can arrive in a fetch with no records,
        # and a poll that returns none waits out its whole timeout.
        while not self.caught_up(published):
            self.step(timeout_ms=20)
            if time.monotonic() > deadline:
                raise TimeoutError(f"the projector did not catch up in {timeout:.0f} s")

    @property
    def state(self) -> str:
        """``starting``, ``standby`` (another projector writes the schema) or ``projecting``."""
        if self.started:
            return "projecting"
        return "standby" if self.standby else "starting"

    def run(self, stop: StopFlag, after_step: Callable[[Projector], None] | None = None) -> None:
        """Project until ``stop`` is set; ``after_step(self)`` after each step."""
        if not self.started:
            return
        while not stop.is_set():
            self.step(timeout_ms=500)
            if after_step is not None:
                after_step(self)
        self.flush()
        self._report_positions()

    def close(self) -> None:
        """Finish the write in flight, then close everything, also when that write failed
        (its error is raised after the connections are closed)."""
        try:
            if self._writer is not None:
                try:
                    self.flush()
                finally:
                    self._writer.shutdown()
                    self._writer = None
        finally:
            if self._short_switch:
                _ShortSwitchInterval.leave()
                self._short_switch = False
            if self._consumer is not None:
                self._consumer.close()
                self._consumer = None
            if self._dead_letters is not None:
                self._dead_letters.close()
                self._dead_letters = None
            if self._key_topic is not None:
                self._key_topic.close()
            if self._conn is not None:
                self._conn.close()  # releases the advisory lock
                self._conn = None

    def stop(self) -> None:
        """Stop reading and close the connections (the same as ``close()``)."""
        self.close()
