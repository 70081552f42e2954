"""Apache Kafka on this machine: its jars from Maven Central, one node or a KRaft cluster."""

from goaicore.kafka.apache.cluster import KafkaNode, Listener, LocalKafka
from goaicore.kafka.apache.jars import (
    KAFKA_VERSION,
    KafkaUnavailable,
    kafka_jars,
    prepared_or_reason,
    unavailable_reason,
)

__all__ = [
    "KAFKA_VERSION",
    "KafkaNode",
    "KafkaUnavailable",
    "Listener",
    "LocalKafka",
    "kafka_jars",
    "prepared_or_reason",
    "unavailable_reason",
]
