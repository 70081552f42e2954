"""Fold throughput: the store worker beside bare Faust agents and a plain consumer.

On each benchmarked broker (a fresh one each time), every measured process gets
the same events on a topic of its own. A Faust process is started and warmed up
with one event (and any history the shape needs folded first), given a few
seconds to settle, then the measured events are published at once (by the
asyncio publisher, faster than any of them consumes), and it is timed from the
broker timestamp of its first output record for them to that of its last
(snapshots for the store worker, marks for the baselines), so start-up and group
rebalances are not counted.

Baselines, each measured in the same run: a plain kafka-python consumer reading
the events (no decoding), a bare Faust agent counting them one at a time, and a
bare Faust agent writing one changelog record per touched key per batch (what
the fold does around its work). Cost per event against conversation length:
the same 100 events for each of 50 conversations, once the conversations are new
and once they already hold 900 events (each the median of three runs). Verify:
10 events for each of 10,000 conversations (1,000 on the embedded broker) folded
by the worker, then every snapshot verified against one read of the log (what
``goaicore verify`` does: a process per core, and in one process), beside a plain
read of the same events by kafka-python and by aiokafka (each the median of three).
"""

from __future__ import annotations

import asyncio
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from goaicore.bench.brokers import broker_settings
from goaicore.bench.registry import Measurement, broker_suite
from goaicore.clients.aio import AsyncEventPublisher
from goaicore.devstack.worker_process import settings_env
from goaicore.extras import needs
from goaicore.fold import fold
from goaicore.kafka.connection import (
    MissingTopicError,
    make_admin,
    make_consumer,
    make_producer,
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
from goaicore.records.avro.api import decode_snapshot, encode_key
from goaicore.replay.verify_shards import default_processes, verify_against_log
from goaicore.sealing.keys import DataKey, MasterKeys, wrap
from goaicore.sealing.records import seal_event
from goaicore.settings import Settings

with needs("kafka"):
    from kafka.admin import NewTopic

WARM_UP = b"warm-up"
SETTLE_SECONDS = 5.0
QUIET_SECONDS = 1.0  # outputs are read once their topic has not grown for this long
NOTE = "loopback, one worker process"
PLAIN = "plain consumer reading the same events"
COUNTING = "bare Faust agent counting the same events"
CHANGELOG = "bare Faust agent writing a changelog record per key per batch"
WORKER = "store worker: events folded into snapshots"
SHORT = "store worker, conversations holding up to 100 events"
LONG = "store worker, conversations holding 900 to 1,000 events"
VERIFY = "verify: every snapshot against one read of the log, a process per core"
VERIFY_ONE = "verify in one process"
AIO_PLAIN = "plain aiokafka consumer reading the same events"
SEALED = "store worker, every event sealed (GOAICORE_MASTER_KEYS)"
INTAKE = "store worker, events published to intake and sealed by it (GOAICORE_INTAKE)"


@dataclass(frozen=True)
class Shape:
    """Events over ``conversations`` conversations, ``each`` apiece, interleaved."""

    conversations: int
    each: int

    @property
    def events(self) -> int:
        return self.conversations * self.each

    @property
    def params(self) -> dict[str, Any]:
        return {"events": self.events, "conversations": self.conversations}


SHAPES = (Shape(200, 100), Shape(6, 1000))
REPEATS = 3  # runs of the length step, whose median is reported
LENGTH_STEP = Shape(50, 100)  # timed on new conversations, and on ones holding 900 events
LONG_HISTORY = Shape(50, 900)
VERIFY_SHAPE = Shape(10_000, 10)
# On the embedded broker a tenth: with 10,000 conversations it once left a fetch of
# the snapshots topic unanswered for 10 s and the run failed.
EMBEDDED_VERIFY_SHAPE = Shape(1_000, 10)


def _events(shape: Shape, first: int = 0, prefix: str = "conv") -> list[ConversationEvent]:
    """The events of ``shape``, round-robin over its conversations (``prefix-N``),
    numbered from ``first``."""
    out = []
    for n in range(first, first + shape.events):
        conv = f"{prefix}-{n % shape.conversations}"
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


@dataclass(frozen=True)
class Outputs:
    """What a timed process wrote: the seconds it is timed over, how many records."""

    seconds: float
    records: int


def _outputs(
    settings: Settings,
    topic: str,
    done: Done,
    timeout: float,
    counted: Callable[[Any], bool] = lambda record: True,
    since_ms: float | None = None,
) -> Outputs:
    """Seconds between the first and last counted output timestamps once ``done(records)``
    (from ``since_ms`` to the last, when given), and how many outputs were counted.

    The outputs are read (and ``done`` decodes them) only once the topic has stopped
    growing for a moment: on a small machine, a reader decoding snapshots while the
    process writes them takes CPU from the process it times, and the more so the
    longer the snapshots.
    """
    consumer = make_consumer(settings)
    deadline = time.monotonic() + timeout
    records: list[Any] = []
    try:
        partitions = _partitions_once_known(consumer, topic, deadline)
        ends = dict.fromkeys(partitions, 0)
        while time.monotonic() < deadline:
            _until_quiet(consumer, partitions, deadline)
            for partition in partitions:  # read on from where the last look ended
                for record in read_to_end(consumer, partition, ends[partition], settings):
                    records.append(record)
                    ends[partition] = record.offset + 1
            if done(records):
                stamps = [r.timestamp for r in records if counted(r)]
                first = min(stamps) if since_ms is None else since_ms
                return Outputs((max(stamps) - first) / 1000, len(stamps))
            time.sleep(0.5)
    finally:
        consumer.close()
    raise TimeoutError(f"{topic} was not complete in {timeout:.0f} s")


def _until_quiet(consumer: Any, partitions: list[Any], deadline: float) -> None:
    """Wait until no partition's end offset has moved for :data:`QUIET_SECONDS`."""
    ends = consumer.end_offsets(partitions)
    still_since = time.monotonic()
    while time.monotonic() - still_since < QUIET_SECONDS and time.monotonic() < deadline:
        time.sleep(QUIET_SECONDS / 4)
        now = consumer.end_offsets(partitions)
        if now != ends:
            ends, still_since = now, time.monotonic()


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


def _marked(count: int) -> Done:
    """Done when a baseline has marked ``count`` events seen."""
    value = str(count).encode()
    return lambda records: any(r.value == value for r in records)


def _publish(settings: Settings, events: Sequence[ConversationEvent]) -> dict[bytes, int]:
    """Publish ``events`` (encoded before the first is sent); the last offset of each
    conversation.

    With the asyncio publisher: kafka-python's took 0.84-0.86 s of CPU for 20,000
    events, against 0.36-0.40 s, and on 2 cores that CPU is taken from the process
    being timed, which now folds them in under two seconds.
    """

    async def publish() -> list[Any]:
        async with AsyncEventPublisher(settings) as publisher:
            return await publisher.publish_many((e.conversation_id, e) for e in events)

    positions = asyncio.run(publish())
    return {e.conversation_id.encode(): p.offset for e, p in zip(events, positions, strict=True)}


@dataclass(frozen=True)
class Process:
    """A process to time: its command line, its output topic and when it is done."""

    command: Callable[[Settings, int], list[str]]
    """Given its settings and how many events it will see in all (warm-up and history
    included)."""
    output: str
    done: Callable[[dict[bytes, int], int], Done]
    """Given the last offset of each conversation and how many events were published."""


WORKER_PROCESS = Process(
    lambda settings, total: [sys.executable, "-m", "goaicore", "worker"],
    "snapshots",
    lambda last, published: _all_folded(last),
)


def _baseline(mode: str) -> Process:
    return Process(
        lambda settings, total: [
            *(sys.executable, "-m", "goaicore.bench.counting_app"),
            *("--mode", mode, "--expect", str(total)),
        ],
        "bench-count",
        lambda last, published: _marked(published),
    )


def _timed(
    process: Process,
    settings: Settings,
    events: Sequence[ConversationEvent],
    history: Sequence[ConversationEvent] = (),
) -> float:
    """Seconds ``process`` takes over ``events``, once warmed up and past ``history``:
    from its first output for them to its last."""
    return timed_run(process, settings, events, history).seconds


@dataclass(frozen=True)
class Run:
    """One timed run of a process over some events."""

    seconds: float
    cpu_seconds: float
    """The process's user and system CPU time from the publishing to its last output."""
    outputs: int
    """The records it wrote for the timed events."""


def timed_run(
    process: Process,
    settings: Settings,
    events: Sequence[ConversationEvent],
    history: Sequence[ConversationEvent] = (),
    from_publish: bool = False,
) -> Run:
    """``process`` over ``events``, once warmed up (one event) and past ``history``.

    Timed from its first output for them to its last, or with ``from_publish`` from the
    moment the events are published (the outputs' topic then needs the broker's append
    times: ``message.timestamp.type=LogAppendTime``).
    """
    import psutil

    output = settings.topic(process.output)
    command = process.command(settings, 1 + len(history) + len(events))
    log_path = settings.data_dir / "worker.log"
    with open(log_path, "ab") as log:
        child = subprocess.Popen(command, env=settings_env(settings), stdout=log, stderr=log)

    def alive(done: Done) -> Done:
        """``done``, once the process is found still running: one that stopped fails the
        run at once instead of at the timeout."""

        def check(records: list[Any]) -> bool:
            if child.poll() is not None:
                raise RuntimeError(
                    f"the timed process exited with {child.returncode} before its outputs "
                    f"were complete (its output is in {log_path})"
                )
            return done(records)

        return check

    try:
        measured = psutil.Process(child.pid)
        warm_up = new_event(WARM_UP.decode(), UserMessage(text="warm up"), source="bench")
        before = _publish(settings, [warm_up, *history])
        _outputs(settings, output, alive(process.done(before, 1 + len(history))), 600)
        time.sleep(SETTLE_SECONDS)
        start_ms = time.time() * 1000 - 1
        cpu = measured.cpu_times()
        last = _publish(settings, events)
        done = alive(process.done(last, 1 + len(history) + len(events)))
        spent: list[Any] = []

        def finished(records: list[Any]) -> bool:
            if not done(records):
                return False
            spent.append(measured.cpu_times())  # once it is done, not after the reading
            return True

        out = _outputs(
            settings,
            output,
            finished,
            600,
            lambda record: record.timestamp >= start_ms,
            since_ms=start_ms if from_publish else None,
        )
        # Linux may read a many-threaded process's time a tick lower than a moment
        # before (its threads' times are scaled when summed): none spent, not negative.
        cpu_seconds = max(0.0, spent[0].user + spent[0].system - cpu.user - cpu.system)
        return Run(out.seconds, cpu_seconds, out.records)
    finally:
        child.terminate()
        child.wait(60)


def plain_read(settings: Settings, count: int) -> float:
    """Events/s of a kafka-python consumer reading every partition of the events topic."""
    consumer = make_consumer(settings)
    try:
        partitions = topic_partitions(consumer, settings.topic("events"))
        consumer.assign(partitions)
        consumer.seek_to_beginning(*partitions)
        started = time.perf_counter()
        read = 0
        while read < count:
            read += sum(len(r) for r in consumer.poll(timeout_ms=500, max_records=5000).values())
        return read / (time.perf_counter() - started)
    finally:
        consumer.close()


async def plain_read_async(settings: Settings, count: int) -> float:
    """Events/s of an aiokafka consumer reading every partition of the events topic."""
    from goaicore.kafka.aio_connection import partitions_of, start_consumer

    consumer = await start_consumer(settings)
    try:
        partitions = await partitions_of(consumer, settings.topic("events"))
        consumer.assign(partitions)
        await consumer.seek_to_beginning(*partitions)
        started = time.perf_counter()
        read = 0
        while read < count:
            fetched = await consumer.getmany(timeout_ms=500, max_records=5000)
            read += sum(len(records) for records in fetched.values())
        return read / (time.perf_counter() - started)
    finally:
        await consumer.stop()


def _verify_rate(settings: Settings, count: int, conversations: int, processes: int) -> float:
    """Events/s of ``goaicore verify`` over ``count`` events of ``conversations`` (all
    snapshots, then the log once, in ``processes``), which must agree."""
    started = time.perf_counter()
    report = verify_against_log(settings, progress=False, processes=processes).report
    elapsed = time.perf_counter() - started
    if report.differences or report.pending or report.unknown or report.checked != conversations:
        raise RuntimeError(
            f"verify disagrees with the benchmark's own log: {len(report.different)} of "
            f"{report.checked} snapshots differ ({conversations} expected), "
            f"{len(report.pending)} pending, {len(report.unknown)} without events"
        )
    return count / elapsed


class _Run:
    """Topics of their own for each measured process, on one broker."""

    def __init__(self, broker: LocalBroker, folder: Path) -> None:
        self.broker = broker
        self.folder = folder
        self.runs = 0

    def settings(self) -> Settings:
        self.runs += 1
        settings = broker_settings(
            self.broker, f"bench-{self.runs}", self.folder / f"run-{self.runs}"
        )
        settings.data_dir.mkdir(parents=True)
        ensure_topics(settings)
        admin = make_admin(settings)
        admin.create_topics([NewTopic(settings.topic("bench-count"), 1, 1)])
        admin.close()
        return settings

    def rate(
        self,
        process: Process,
        events: Sequence[ConversationEvent],
        history: Sequence[ConversationEvent] = (),
    ) -> float:
        span = _timed(process, self.settings(), events, history)
        return len(events) / max(span, 1e-3)

    def sealed_rate(self, events: Sequence[ConversationEvent]) -> float:
        """The store worker's rate over ``events`` sealed under their conversations' keys,
        the keys on the keys topic before the worker starts (as it would have made them)."""
        masters = MasterKeys.generate("bench")
        settings = self.settings().with_overrides(
            master_keys=masters.to_text(),
            intake_override=False,  # sealed here: straight in
        )
        keys = {c: DataKey.generate() for c in dict.fromkeys(e.conversation_id for e in events)}
        producer = make_producer(settings)
        try:
            for conversation, key in keys.items():
                wrapped = encode_key(wrap(masters, conversation, key))
                producer.send(settings.topic("keys"), key=conversation.encode(), value=wrapped)
            producer.flush(60)
        finally:
            producer.close()
        sealed = [seal_event(e, keys[e.conversation_id]) for e in events]
        return len(sealed) / max(_timed(WORKER_PROCESS, settings, sealed), 1e-3)

    def intake_rate(self, events: Sequence[ConversationEvent]) -> float:
        """The store worker's rate over ``events`` published to ``intake``: it makes each
        conversation's key, seals every event into ``events``, and folds it. Only the
        worker writes ``events`` here, so an event's offset there is its intake offset."""
        masters = MasterKeys.generate("bench").to_text()
        settings = self.settings().with_overrides(master_keys=masters)
        return len(events) / max(_timed(WORKER_PROCESS, settings, events), 1e-3)

    def median_rate(
        self,
        process: Process,
        events: Sequence[ConversationEvent],
        history: Sequence[ConversationEvent] = (),
    ) -> float:
        """The median of :data:`REPEATS` rates, each on topics of its own: a step of a
        few seconds varies by half from one run to the next."""
        return statistics.median(self.rate(process, events, history) for _ in range(REPEATS))


@broker_suite("store")
def store(broker: LocalBroker) -> list[Measurement]:
    first = SHAPES[0]

    def row(name: str, value: float, params: dict[str, Any], **compare: Any) -> Measurement:
        return Measurement("store", name, value, "events/s", params, NOTE, **compare)

    rows = [
        Measurement(
            "store",
            "fold alone (the ceiling)",
            _fold_alone(_events(first)),
            "events/s",
            first.params,
            "one process, no I/O",
        )
    ]
    with tempfile.TemporaryDirectory() as tmp:
        run = _Run(broker, Path(tmp))
        plain = run.settings()
        _publish(plain, _events(first))
        rows.append(row(PLAIN, plain_read(plain, first.events), first.params))
        rows.append(row(COUNTING, run.rate(_baseline("count"), _events(first)), first.params))
        for shape in SHAPES:
            events = _events(shape)
            rows.append(row(CHANGELOG, run.rate(_baseline("changelog"), events), shape.params))
            versus = (PLAIN, COUNTING) if shape == first else ()
            rate = run.rate(WORKER_PROCESS, events)
            rows.append(row(WORKER, rate, shape.params, baseline=CHANGELOG, also_versus=versus))
            if shape == first:
                rows.append(row(SEALED, run.sealed_rate(events), shape.params, baseline=WORKER))
                rows.append(row(INTAKE, run.intake_rate(events), shape.params, baseline=WORKER))
        step = LENGTH_STEP.params
        short = _events(LENGTH_STEP)
        rows.append(row(SHORT, run.median_rate(WORKER_PROCESS, short), step))
        history = _events(LONG_HISTORY)
        longer = _events(LENGTH_STEP, len(history))
        rate = run.median_rate(WORKER_PROCESS, longer, history)
        rows.append(row(LONG, rate, step, baseline=SHORT))
        verify = VERIFY_SHAPE if broker.kind == "kafka" else EMBEDDED_VERIFY_SHAPE
        rows += _verify_rows(run.settings(), verify)
    return rows


def _verify_rows(settings: Settings, shape: Shape) -> list[Measurement]:
    """Snapshots folded by the worker, then verified (a process per core, and in one):
    beside one plain read of the log by kafka-python (the baseline) and by aiokafka (the
    client verify reads with); each the median of three runs."""
    events = _events(shape)
    folding = len(events) / _timed(WORKER_PROCESS, settings, events)
    total = 1 + len(events)  # and the warm-up event
    conversations = 1 + shape.conversations
    processes = min(default_processes(), settings.partitions)
    runs = [
        (
            plain_read(settings, total),
            asyncio.run(plain_read_async(settings, total)),
            _verify_rate(settings, total, conversations, processes),
            _verify_rate(settings, total, conversations, 1),
        )
        for _ in range(REPEATS)  # each a second or a few: the median of three
    ]
    plain, aio_plain, verified, one_process = (
        statistics.median(column) for column in zip(*runs, strict=True)
    )
    params = shape.params
    return [
        Measurement("store", WORKER, folding, "events/s", params, NOTE),
        Measurement("store", PLAIN, plain, "events/s", params, NOTE),
        Measurement("store", AIO_PLAIN, aio_plain, "events/s", params, NOTE),
        Measurement(
            "store",
            VERIFY,
            verified,
            "events/s",
            params,
            f"loopback, {processes} processes (one per core, at most one per partition)",
            baseline=PLAIN,
            also_versus=(AIO_PLAIN,),
        ),
        Measurement("store", VERIFY_ONE, one_process, "events/s", params, NOTE, baseline=PLAIN),
    ]
