"""The deployment's round trips on real infrastructure, as its processes run them.

Each test runs twice: on Apache Kafka and PostgreSQL containers (testcontainers,
marker ``docker``: skipped with the reason when no Docker engine answers) with
the standard broker profile, and on the test session's broker (the local Apache
Kafka node where Java is here, else the embedded broker) and PostgreSQL.

- the Kafka clients: EventPublisher -> HistoryReader;
- ``goaicore create-topics`` as the topic job runs it;
- a ``goaicore worker`` process bound as in a container: ready, folds events into
  snapshots that ``goaicore verify`` confirms, serves them over HTTP;
- a ``goaicore projector`` process writing the rows that ``verify --db`` confirms.
Apache Kafka's first group join waits out a session timeout: the timeouts are generous.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from goaicore.clients import EventPublisher, HistoryReader
from goaicore.config import Settings
from goaicore.devstack.projector_process import ProjectorProcess
from goaicore.kafka.topics import TOPICS
from goaicore.records import ConversationEvent, GameEvent, UserMessage, new_event
from tests.deploy.processes import WebWorker, get, goaicore
from tests.kafka.helpers import row_counts
from tests.store.workers import wait_folded

# Confluent's build of Apache Kafka: testcontainers' KafkaContainer configures it (KRaft).
KAFKA_IMAGE = "confluentinc/cp-kafka:7.6.0"
POSTGRES_IMAGE = "postgres:16-alpine"
CONVERSATIONS = [f"deploy-{n}" for n in range(6)]
READY_TIMEOUT = 240.0

pytestmark = pytest.mark.timeout(900)


@dataclass(frozen=True)
class Infra:
    bootstrap_servers: str
    database_url: str
    profile: str


@pytest.fixture(
    scope="module",
    params=[pytest.param("containers", marks=pytest.mark.docker), "session-broker"],
)
def infra(request: pytest.FixtureRequest) -> Iterator[Infra]:
    if request.param == "session-broker":
        broker = request.getfixturevalue("kafka_broker")
        yield Infra(
            broker.bootstrap_servers, request.getfixturevalue("postgres_url"), broker.profile
        )
        return
    from testcontainers.community.kafka import KafkaContainer
    from testcontainers.community.postgres import PostgresContainer

    with (
        KafkaContainer(image=KAFKA_IMAGE).with_kraft() as kafka,
        PostgresContainer(POSTGRES_IMAGE, driver=None) as postgres,
    ):
        yield Infra(kafka.get_bootstrap_server(), postgres.get_connection_url(), "standard")


@pytest.fixture(scope="module")
def deployed(infra: Infra, tmp_path_factory: pytest.TempPathFactory) -> Settings:
    """A prefix and a projection schema of the module's own, its topics made by the job."""
    prefix = f"d{uuid.uuid4().hex[:10]}"
    settings = Settings(
        env={},
        bootstrap_servers=infra.bootstrap_servers,
        broker_profile="standard" if infra.profile == "standard" else "embedded",
        topic_prefix=prefix,
        partitions=3,
        replication_factor=1,
        database_url=infra.database_url,
        db_schema=prefix,
        data_dir=tmp_path_factory.mktemp("deploy"),
    )
    job = goaicore(settings, "create-topics", "--wait", "60")
    assert job.returncode == 0, job.stderr
    assert sum(line.startswith("created ") for line in job.stdout.splitlines()) == len(TOPICS)
    return settings


def _story(conversation: str) -> list[ConversationEvent]:
    return [
        new_event(conversation, GameEvent(kind="check-in", text=f"{conversation} checked in")),
        new_event(conversation, UserMessage(text=f"hello from {conversation}")),
        new_event(conversation, GameEvent(kind="score", text="+5 points for Leeds")),
    ]


@pytest.fixture(scope="module")
def published(deployed: Settings) -> dict[str, list[ConversationEvent]]:
    stories = {c: _story(c) for c in CONVERSATIONS}
    with EventPublisher(deployed, source="deploy-test") as publisher:
        publisher.publish_many((e.conversation_id, e) for s in stories.values() for e in s)
    return stories


@pytest.fixture(scope="module")
def worker(
    deployed: Settings, published: dict[str, list[ConversationEvent]]
) -> Iterator[WebWorker]:
    process = WebWorker(deployed).start()
    try:
        process.wait_ready(READY_TIMEOUT)
        yield process
    finally:
        process.stop()


def test_create_topics_again_finds_them(deployed: Settings) -> None:
    again = goaicore(deployed, "create-topics")
    assert again.returncode == 0, again.stderr
    lines = again.stdout.splitlines()
    assert len(lines) == len(TOPICS)
    assert all(line.startswith("exists ") for line in lines)


def test_clients_round_trip(
    deployed: Settings, published: dict[str, list[ConversationEvent]]
) -> None:
    with HistoryReader(deployed) as reader:
        for conversation, story in published.items():
            assert list(reader.events(conversation)) == story


def test_worker_folds_into_snapshots_that_verify_confirms(
    deployed: Settings, published: dict[str, list[ConversationEvent]], worker: WebWorker
) -> None:
    with HistoryReader(deployed) as reader:
        last = {c: max(e.offset for e in reader.logged_events(c)) for c in published}
    snapshots = wait_folded(deployed, last, timeout=READY_TIMEOUT, workers=(worker,))
    for conversation, story in published.items():
        assert snapshots[conversation].event_count == len(story)
        status, body = get(f"{worker.url}/v1/conversations/{conversation}")
        assert status == 200, body
        assert [m["text"] for m in body["messages"]] == [e.body.text for e in story]  # type: ignore[union-attr]
    verified = goaicore(deployed, "verify", timeout=300)
    assert verified.returncode == 0, verified.stdout + verified.stderr
    assert f"verified {len(published)} snapshots: {len(published)} equal" in verified.stdout


def test_projector_writes_the_rows_verify_db_confirms(
    deployed: Settings,
    published: dict[str, list[ConversationEvent]],
    worker: WebWorker,
    tmp_path: Path,
) -> None:
    events = sum(len(s) for s in published.values())
    projector = ProjectorProcess(deployed, tmp_path / "projector.log")
    projector.start()
    try:
        counts = (0, 0)
        deadline = time.monotonic() + READY_TIMEOUT
        while time.monotonic() < deadline:
            assert projector.alive(), (tmp_path / "projector.log").read_text()[-4000:]
            counts = row_counts(deployed)
            if counts == (events, len(published)):
                break
            time.sleep(0.5)
        assert counts == (events, len(published)), (tmp_path / "projector.log").read_text()[-4000:]
    finally:
        projector.stop()
    verified = goaicore(deployed, "verify", "--db", timeout=300)
    assert verified.returncode == 0, verified.stdout + verified.stderr
