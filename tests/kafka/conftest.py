"""Fixtures shared by the Apache Kafka tests of this folder."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from goaicore.kafka.apache import LocalKafka
from tests.brokers import start_apache_kafka


@pytest.fixture(scope="module")
def retention_kafka(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalKafka]:
    """A broker of the module's own that checks retention every second (Kafka's default
    is every five minutes), for tests that watch records expire or compact away."""
    broker = start_apache_kafka(
        tmp_path_factory.mktemp("kafka"), nodes=1, **{"log.retention.check.interval.ms": "1000"}
    )
    try:
        yield broker
    finally:
        broker.stop()


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalKafka]:
    """A three-node cluster of the module's own (replication factor 3 and
    ``min.insync.replicas=2`` by default)."""
    kafka = start_apache_kafka(tmp_path_factory.mktemp("cluster"), nodes=3)
    try:
        yield kafka
    finally:
        kafka.stop()
