"""The raw protocol probes: a broker's answer, and one clear line for anything else."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest

from goaicore.kafka.probe import kafka_api_versions_error, kafka_known_brokers
from tests.brokers import SessionBroker
from tests.listeners import http_listener


@pytest.fixture
def not_kafka() -> Iterator[int]:
    """Something at the address that answers, but not Kafka."""
    with http_listener() as port:
        yield port


def test_the_session_broker_answers_both_probes(kafka_broker: SessionBroker) -> None:
    host, port = kafka_broker.bootstrap_servers.split(",")[0].rsplit(":", 1)
    assert kafka_api_versions_error(host, int(port), timeout=5) is None
    known = kafka_known_brokers(host, int(port), timeout=5)
    assert not isinstance(known, str), known
    brokers, controller = known
    assert brokers
    if kafka_broker.apache is not None:  # the embedded broker reports no controller
        assert brokers == {node.node_id for node in kafka_broker.apache.nodes}
        assert controller in brokers


def test_something_else_on_the_port_is_an_error_not_a_hang(not_kafka: int) -> None:
    assert "not a Kafka answer" in (kafka_api_versions_error("127.0.0.1", not_kafka, 2) or "")
    assert "not a Kafka answer" in str(kafka_known_brokers("127.0.0.1", not_kafka, 2))


def test_a_closed_port_is_an_error() -> None:
    with socket.socket() as free:
        free.bind(("127.0.0.1", 0))
        port = free.getsockname()[1]
    assert "ConnectionRefusedError" in (kafka_api_versions_error("127.0.0.1", port, 2) or "")
