"""The embedded broker: it starts, answers Kafka clients, and stops completely."""

from __future__ import annotations

import socket

import psutil
import pytest
from kafka import KafkaConsumer, KafkaProducer, TopicPartition

from goaicore.kafka import BrokerStartError, EmbeddedBroker
from goaicore.net import port_open


def test_start_answers_and_stop_leaves_nothing() -> None:
    broker = EmbeddedBroker().start()
    pid = broker.pid
    assert pid is not None
    assert port_open("127.0.0.1", broker.port)

    producer = KafkaProducer(bootstrap_servers=broker.bootstrap_servers)
    sent = producer.send("roundtrip", key=b"k", value=b"hello").get(timeout=10)
    producer.close()
    consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap_servers)
    partition = TopicPartition("roundtrip", sent.partition)
    consumer.assign([partition])
    consumer.seek(partition, sent.offset)
    records = consumer.poll(timeout_ms=5000).get(partition, [])
    consumer.close()
    assert [(r.key, r.value) for r in records] == [(b"k", b"hello")]

    broker.stop()
    assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    assert not port_open("127.0.0.1", broker.port)
    broker.stop()  # stopping twice is harmless


def test_port_in_use_fails_with_a_clear_error() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(BrokerStartError, match=f"127.0.0.1:{port}"):
            EmbeddedBroker(port=port).start(timeout=5)


def test_context_manager_stops_on_error() -> None:
    ports: list[int] = []

    def fail_inside() -> None:
        with EmbeddedBroker() as broker:
            ports.append(broker.port)
            raise RuntimeError("inside")

    with pytest.raises(RuntimeError, match="inside"):
        fail_inside()
    assert not port_open("127.0.0.1", ports[0])
