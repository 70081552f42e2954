"""Traffic, probes and checks for the tests on a local Apache Kafka that each module starts.

The tests here start their own brokers (one node or a three-node cluster) under
their tmp folder, so they can stop, kill and restart them. Every wait is generous
and nothing asserts a timing: Faust's group session is 60 s on Apache Kafka, and a
broker's failure is noticed by the controller only after its own session.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kafka import KafkaAdminClient, TopicPartition
from kafka.admin import ConfigResource, ConfigResourceType
from kafka.errors import KafkaError

from goaicore.clients import EventPublisher, HistoryReader
from goaicore.clients.snapshots import SnapshotReader
from goaicore.config import Settings
from goaicore.devstack.projector_process import ProjectorProcess
from goaicore.errors import BrokerError
from goaicore.kafka.apache import LocalKafka
from goaicore.kafka.connection import make_consumer, make_producer
from goaicore.kafka.partition_reader import read_to_end
from goaicore.projection.db import connect
from goaicore.records import ConversationSnapshot, GameEvent, new_chat_request, new_event
from goaicore.records.avro.api import encode_chat_request
from goaicore.testing import OpenAIServer
from tests.chat_agent.helpers import ChatWorker, Replies, llm_env
from tests.deploy.processes import goaicore
from tests.store.workers import StoreWorker

log = logging.getLogger(__name__)

# goaicore's own topics (the Faust app adds the replies table's changelog).
TOPICS = (
    "events",
    "snapshots",
    "keys",
    "intake",
    "requests",
    "replies",
    "reply-stream",
    "dead-letters",
)


def kafka_settings(
    kafka: LocalKafka,
    postgres_url: str,
    data_dir: Path,
    partitions: int = 3,
    replication: int = 1,
) -> Settings:
    """Settings of a fresh topic prefix (and projection schema) on ``kafka``."""
    prefix = f"k{uuid.uuid4().hex[:10]}"
    data_dir.mkdir(parents=True, exist_ok=True)
    return Settings(
        env={},
        bootstrap_servers=kafka.bootstrap_servers,
        broker_profile="standard",
        topic_prefix=prefix,
        partitions=partitions,
        replication_factor=replication,
        database_url=postgres_url,
        db_schema=prefix,
        data_dir=data_dir,
    )


def chat_worker(
    settings: Settings, llm: OpenAIServer | None = None, name: str = "worker"
) -> ChatWorker:
    """A started ``goaicore worker`` (chat on ``llm`` when given) with the cluster's replication.

    The replication factor is passed as a deployment passes it, so the replies
    table's changelog (a Faust topic) is replicated like goaicore's topics.
    """
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    env = {"GOAICORE_REPLICATION_FACTOR": str(settings.replication_factor)}
    if llm is not None:
        env = llm_env(llm, **env)
    return ChatWorker(settings, name, **env).start()


def projector(settings: Settings, name: str = "projector") -> ProjectorProcess:
    """A started ``goaicore projector`` writing the settings' schema."""
    return ProjectorProcess(settings, settings.data_dir / f"{name}.log").start()


def wait_until(
    check: Callable[[], bool],
    timeout: float,
    what: str,
    poll: float = 0.5,
    state: Callable[[], str] | None = None,
) -> None:
    """Poll ``check``; on timeout say ``what`` and, when given, ``state()`` (why it is not so)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(poll)
    raise AssertionError(f"{what}: not within {timeout:.0f} s" + (f"\n{state()}" if state else ""))


def snapshots(settings: Settings) -> dict[str, ConversationSnapshot] | None:
    """Every snapshot in the snapshots topic; None while a partition has no leader to read."""
    try:
        with SnapshotReader(settings) as reader:
            return reader.all(progress=False)
    except BrokerError:  # LogReadTimeout, or a Kafka error the reader wrapped
        return None


def wait_event_counts(
    settings: Settings,
    expected: dict[str, int],
    timeout: float,
    workers: Iterable[StoreWorker] = (),
) -> dict[str, ConversationSnapshot]:
    """Wait until every conversation's snapshot has folded at least its expected events."""
    deadline = time.monotonic() + timeout
    seen: dict[str, ConversationSnapshot] = {}
    while time.monotonic() < deadline:
        for worker in workers:
            assert worker.alive(), f"{worker.log_path.name} exited:\n{worker.log()[-4000:]}"
        seen = snapshots(settings) or seen
        if all(c in seen and seen[c].event_count >= n for c, n in expected.items()):
            return seen
        time.sleep(3)  # each look reads the whole snapshots topic
    behind = {
        c: (seen[c].event_count if c in seen else None, n)
        for c, n in expected.items()
        if c not in seen or seen[c].event_count < n
    }
    logs = "".join(
        f"\n--- {w.log_path.name}: its tasks ---\n{w.task_stacks()}"
        f"\n--- {w.log_path.name} ---\n{worker_log_digest(w.log())}"
        for w in workers
    )
    raise AssertionError(
        f"not folded in {timeout:.0f} s: {len(behind)} conversations behind, "
        f"(folded, wanted) {dict(list(behind.items())[:10])}{logs}"
    )


_unread_offsets_errors: set[str] = set()


def committed_events(settings: Settings) -> int:
    """Offsets of ``events`` the store workers' group has committed (every partition summed).

    The worker commits an event's offset only after its fold is in the table, so
    this counts folded records without reading the snapshots topic.
    """
    admin = KafkaAdminClient(bootstrap_servers=settings.require_bootstrap())
    group = f"{settings.topic_prefix}.store"
    try:
        offsets = admin.list_group_offsets({group: None}).get(group, {})
    except KafkaError as err:
        if repr(err) not in _unread_offsets_errors:  # said once: the tests poll this
            _unread_offsets_errors.add(repr(err))
            log.warning("the committed offsets of %s were not read: %r", group, err)
        return 0
    finally:
        admin.close()
    events = settings.topic("events")
    return sum(max(int(o.offset), 0) for tp, o in offsets.items() if tp.topic == events)


class EventStream:
    """Publishes ``total`` game events over ``conversations`` conversations from a thread.

    The events are built here, so their ids are known; batches go out every
    ``pause`` seconds and wait for the broker's acknowledgement (retrying through
    a broker's failure for up to ``send_timeout``).
    """

    def __init__(
        self,
        settings: Settings,
        total: int,
        conversations: int,
        name: str = "stream",
        batch: int = 100,
        pause: float = 0.3,
        send_timeout: float = 240.0,
    ) -> None:
        self.settings = settings
        self.total = total
        self.names = [f"{name}-{n}" for n in range(conversations)]
        self.batch = batch
        self.pause = pause
        self.send_timeout = send_timeout
        self.event_ids: list[str] = []
        self.sent = 0
        self.errors: list[BaseException] = []
        self.done = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> EventStream:
        self._thread.start()
        return self

    def expected_counts(self) -> dict[str, int]:
        counts = Counter(self.names[n % len(self.names)] for n in range(self.total))
        return dict(counts)

    def wait(self, timeout: float) -> None:
        assert self.done.wait(timeout), f"the stream did not finish in {timeout:.0f} s"
        assert not self.errors, self.errors
        assert self.sent == self.total

    def _run(self) -> None:
        try:
            with EventPublisher(self.settings, source="stream") as publisher:
                for start in range(0, self.total, self.batch):
                    events = [
                        new_event(
                            self.names[n % len(self.names)],
                            GameEvent(kind="tick", text=f"e{n}"),
                            source="stream",
                        )
                        for n in range(start, min(start + self.batch, self.total))
                    ]
                    publisher.publish_many(
                        ((e.conversation_id, e) for e in events), timeout=self.send_timeout
                    )
                    self.event_ids.extend(e.event_id for e in events)
                    self.sent += len(events)
                    time.sleep(self.pause)
        except BaseException as err:
            self.errors.append(err)
        finally:
            self.done.set()


class ChatLoad:
    """Sends ``total`` chat requests over ``conversations`` conversations from a thread.

    Requests are published by a producer of the test's own (acks=all, idempotent,
    retrying through a broker's failure); ``replies`` collects every reply.
    """

    def __init__(
        self,
        settings: Settings,
        replies: Replies,
        total: int,
        conversations: int,
        name: str = "chat",
        pause: float = 0.2,
        send_timeout: float = 240.0,
    ) -> None:
        self.settings = settings
        self.replies = replies
        self.total = total
        self.names = [f"{name}-{n}" for n in range(conversations)]
        self.pause = pause
        self.send_timeout = send_timeout
        self.requests: dict[str, str] = {}  # request id -> conversation
        self.texts: dict[str, str] = {}  # request id -> question
        self.errors: list[BaseException] = []
        self.done = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> ChatLoad:
        self._thread.start()
        return self

    def answered(self) -> int:
        return sum(1 for rid in list(self.requests) if self.replies.seen.get(rid))

    def wait_sent(self, timeout: float) -> None:
        assert self.done.wait(timeout), f"the requests were not all sent in {timeout:.0f} s"
        assert not self.errors, self.errors
        assert len(self.requests) == self.total

    def _run(self) -> None:
        producer = make_producer(self.settings)
        topic = self.settings.topic("requests")
        try:
            for n in range(self.total):
                conversation = self.names[n % len(self.names)]
                request = new_chat_request(conversation, f"{conversation} question {n}")
                value = encode_chat_request(request)
                future = producer.send(topic, key=conversation.encode(), value=value)
                future.get(self.send_timeout)
                self.requests[request.request_id] = conversation
                self.texts[request.request_id] = request.text
                time.sleep(self.pause)
        except BaseException as err:
            self.errors.append(err)
        finally:
            producer.close()
            self.done.set()


def describe(settings: Settings, names: Iterable[str]) -> dict[tuple[str, int], dict[str, Any]]:
    """Leader, replicas and ISR of every partition of the named topics (full names)."""
    admin = KafkaAdminClient(bootstrap_servers=settings.require_bootstrap())
    try:
        out: dict[tuple[str, int], dict[str, Any]] = {}
        for topic in admin.describe_topics(list(names)):
            for partition in topic["partitions"]:
                out[(topic["name"], partition["partition_index"])] = partition
        return out
    finally:
        admin.close()


def goaicore_topics(settings: Settings) -> list[str]:
    return [settings.topic(t) for t in TOPICS]


def alter_topic(settings: Settings, topic: str, configs: dict[str, str]) -> None:
    """Set topic configs (incrementally: the others stay as they are)."""
    admin = KafkaAdminClient(bootstrap_servers=settings.require_bootstrap())
    try:
        admin.alter_configs([ConfigResource(ConfigResourceType.TOPIC, topic, configs=configs)])
    finally:
        admin.close()


@dataclass(frozen=True)
class PartitionLog:
    """What a partition holds: where it starts and ends, and how many records a reader gets."""

    start: int
    end: int
    readable: int


def partition_logs(settings: Settings, topic: str) -> dict[int, PartitionLog]:
    """Log start, end and the number of records read from the beginning, per partition."""
    consumer = make_consumer(settings)
    try:
        partitions = [TopicPartition(topic, p) for p in range(settings.partitions)]
        starts = consumer.beginning_offsets(partitions)
        ends = consumer.end_offsets(partitions)
        out: dict[int, PartitionLog] = {}
        for tp in partitions:
            readable = sum(1 for _ in read_to_end(consumer, tp, settings=settings))
            out[tp.partition] = PartitionLog(int(starts[tp]), int(ends[tp]), readable)
        return out
    finally:
        consumer.close()


def log_event_ids(settings: Settings) -> Counter[str]:
    """How many times each event id is in the events topic."""
    with HistoryReader(settings) as history:
        counted = Counter(logged.event.event_id for logged in history.all_events(progress=False))
        assert history.skipped == 0
    return counted


def row_counts(settings: Settings) -> tuple[int, int]:
    """Rows in conversation_events and conversation_snapshots, (0, 0) before migrations."""
    import psycopg

    schema = settings.db_schema
    try:
        with connect(settings) as conn:
            events = conn.execute(f"SELECT count(*) FROM {schema}.conversation_events").fetchone()
            snaps = conn.execute(f"SELECT count(*) FROM {schema}.conversation_snapshots").fetchone()
    except psycopg.errors.UndefinedTable:
        return (0, 0)
    assert events is not None
    assert snaps is not None
    return int(events[0]), int(snaps[0])


def projected_event_counts(settings: Settings) -> dict[str, int]:
    """event_count of every snapshot row in PostgreSQL."""
    with connect(settings) as conn:
        rows = conn.execute(
            f"SELECT conversation_id, event_count FROM {settings.db_schema}.conversation_snapshots"
        ).fetchall()
    return {str(conversation): int(count) for conversation, count in rows}


def wait_projected(
    settings: Settings, counts: tuple[int, int], process: ProjectorProcess, timeout: float
) -> None:
    """Wait until the projection holds ``counts`` (event rows, snapshot rows)."""
    seen = (0, 0)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert process.alive(), process.log_path.read_text(errors="replace")[-4000:]
        seen = row_counts(settings)
        if seen == counts:
            return
        time.sleep(1)
    log = process.log_path.read_text(errors="replace")[-4000:]
    raise AssertionError(f"projected {seen}, wanted {counts} in {timeout:.0f} s\n{log}")


def assert_verified(settings: Settings, snapshots_checked: int) -> None:
    """``goaicore verify`` and ``goaicore verify --db`` exit 0 with nothing different."""
    verified = goaicore(settings, "verify", timeout=600)
    assert verified.returncode == 0, verified.stdout + verified.stderr
    assert (
        f"verified {snapshots_checked} snapshots: {snapshots_checked} equal, 0 different"
        in verified.stdout
    ), verified.stdout
    in_db = goaicore(settings, "verify", "--db", timeout=600)
    assert in_db.returncode == 0, in_db.stdout + in_db.stderr
    assert (
        f"verified {snapshots_checked} stored snapshots against the stored events: "
        f"{snapshots_checked} equal, 0 different, 0 pending" in in_db.stdout
    ), in_db.stdout


def worker_log_digest(text: str, lines: int = 60) -> str:
    """A worker log's last warnings and errors, then its last lines: a worker answering
    chats logs every call to the model, which would bury why it stopped folding."""
    rows = text.splitlines()
    notable = [row for row in rows if "[WARNING]" in row or "[ERROR]" in row or "Traceback" in row]
    return "\n".join(["(last warnings and errors)", *notable[-lines:], "(last lines)", *rows[-20:]])
