"""Kafka clients built from Settings, with the broker profile and security applied in one place.

Every kafka-python client goaicore makes comes from here: ``make_producer``,
``make_consumer`` and ``make_admin`` add the broker profile's settings and the
SSL/SASL options of ``goaicore.broker.security``, and turn a connection refused
for its credentials or TLS into one ``KafkaSecurityError`` line.
"""

from __future__ import annotations

from typing import Any

from goaicore.broker.limits import max_batch_bytes
from goaicore.broker.profile import client_profile
from goaicore.broker.security import explain_connect_failures, kafka_python_options
from goaicore.config import Settings


def make_producer(settings: Settings, **overrides: Any) -> Any:
    """A kafka-python producer: acks=all, idempotent, the profile's settings."""
    from kafka import KafkaProducer

    options: dict[str, Any] = {
        "bootstrap_servers": settings.require_bootstrap(),
        "client_id": "goaicore",
        "max_request_size": max_batch_bytes(settings),
        **client_profile(settings).producer,
        **kafka_python_options(settings),
        **overrides,
    }
    with explain_connect_failures(settings):
        return KafkaProducer(**options)


def make_consumer(settings: Settings, **overrides: Any) -> Any:
    """A kafka-python consumer with the profile's settings; no auto-commit by default."""
    from kafka import KafkaConsumer

    options: dict[str, Any] = {
        "bootstrap_servers": settings.require_bootstrap(),
        "client_id": "goaicore",
        "enable_auto_commit": False,
        "fetch_max_wait_ms": 100,
        **client_profile(settings).consumer,
        **kafka_python_options(settings),
        **overrides,
    }
    with explain_connect_failures(settings):
        return KafkaConsumer(**options)


def make_admin(settings: Settings, **overrides: Any) -> Any:
    """A kafka-python admin client with the settings' security."""
    from kafka import KafkaAdminClient

    options: dict[str, Any] = {
        "bootstrap_servers": settings.require_bootstrap(),
        "client_id": "goaicore-admin",
        **kafka_python_options(settings),
        **overrides,
    }
    with explain_connect_failures(settings):
        return KafkaAdminClient(**options)


class MissingTopicError(LookupError):
    """A topic goaicore needs does not exist yet."""


def topic_partitions(consumer: Any, topic: str) -> list[Any]:
    """Every partition of ``topic`` as TopicPartitions; MissingTopicError when absent."""
    from kafka import TopicPartition

    partitions = consumer.partitions_for_topic(topic)
    if not partitions:
        raise MissingTopicError(f"topic {topic} does not exist (is `goaicore dev` running?)")
    return [TopicPartition(topic, p) for p in sorted(partitions)]


def partition_for(conversation_id: str, partitions: int) -> int:
    """The partition a conversation's records land in (the Java client's murmur2 rule).

    Every producer of ours (kafka-python, Faust/aiokafka) uses this default
    partitioner, which is what keeps the topics co-partitioned by conversation.
    """
    from kafka.partitioner.default import murmur2

    hashed: int = murmur2(conversation_id.encode())
    return (hashed & 0x7FFFFFFF) % partitions
