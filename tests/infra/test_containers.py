"""The same round trips against Apache Kafka and PostgreSQL containers (testcontainers).

Marked ``docker``: skipped, with the reason, when no Docker engine answers.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from goaicore.config import Settings
from goaicore.devstack.stack import record_round_trip, row_round_trip
from goaicore.kafka import ensure_topics

pytestmark = pytest.mark.docker

KAFKA_IMAGE = "confluentinc/cp-kafka:7.6.0"
POSTGRES_IMAGE = "postgres:16-alpine"


@pytest.fixture(scope="module")
def apache_kafka() -> Iterator[str]:
    from testcontainers.community.kafka import KafkaContainer

    with KafkaContainer(image=KAFKA_IMAGE).with_kraft() as kafka:
        yield kafka.get_bootstrap_server()


@pytest.fixture(scope="module")
def postgres_container() -> Iterator[str]:
    from testcontainers.community.postgres import PostgresContainer

    with PostgresContainer(POSTGRES_IMAGE, driver=None) as postgres:
        yield postgres.get_connection_url()


def test_round_trips_on_apache_kafka_and_postgres(
    apache_kafka: str, postgres_container: str, tmp_path: Path
) -> None:
    settings = Settings(
        env={},
        bootstrap_servers=apache_kafka,
        broker_profile="standard",
        topic_prefix=f"t{uuid.uuid4().hex[:8]}",
        partitions=3,
        replication_factor=1,
        database_url=postgres_container,
        data_dir=tmp_path,
    )
    statuses = ensure_topics(settings)
    assert {s.action for s in statuses} == {"created"}
    assert {s.action for s in ensure_topics(settings)} == {"exists"}
    topic, _partition, offset, _ms = record_round_trip(settings)
    assert topic == settings.topic("stack-check")
    assert offset >= 0
    table, row_id, _ms = row_round_trip(settings)
    assert (table, row_id > 0) == ("goaicore_stack_check", True)
