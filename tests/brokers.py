"""Which broker the test session runs on: Apache Kafka where it can, else the embedded one.

``GOAICORE_TEST_BROKER`` chooses: ``auto`` (the default: Apache Kafka where Java 17+
and Maven, or cached jars, are here, else the embedded broker), ``kafka`` (Apache
Kafka or a failed run: CI sets this), ``embedded``.

The test broker's config holds the settings that make tests fast without
changing what clients see; goaicore's client settings stay the production ones.
"""

from __future__ import annotations

import os
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from goaicore.config import BrokerProfile, Settings
from goaicore.kafka import EmbeddedBroker
from goaicore.kafka.apache import KAFKA_VERSION, LocalKafka, prepared_or_reason
from goaicore.kafka.apache.jars import KafkaUnavailable

# Fast for tests, same semantics: no wait for more members before the first
# rebalance, few offsets partitions to create, short sessions allowed for the
# tests that ask for them, and a log cleaner that looks often.
TEST_BROKER_CONFIG = {
    "group.initial.rebalance.delay.ms": "0",
    "group.min.session.timeout.ms": "1000",
    "offsets.topic.num.partitions": "6",
    "log.cleaner.backoff.ms": "500",
}


@dataclass(frozen=True)
class BrokerChoice:
    """The session's broker kind and, when it is not Apache Kafka, why not."""

    kind: str  # "kafka" or "embedded"
    why_not_kafka: str | None

    @property
    def apache(self) -> bool:
        return self.kind == "kafka"

    @property
    def profile(self) -> BrokerProfile:
        return "standard" if self.apache else "embedded"

    def describe(self) -> str:
        if self.apache:
            return f"Apache Kafka {KAFKA_VERSION} (local KRaft node, standard client profile)"
        return f"embedded tansu broker (embedded client profile): {self.why_not_kafka}"


def choose_broker() -> BrokerChoice:
    """Decide once per session; fetching the jars here shows the first fetch up front."""
    wanted = os.environ.get("GOAICORE_TEST_BROKER", "auto").strip() or "auto"
    if wanted not in ("auto", "kafka", "embedded"):
        raise ValueError(f"GOAICORE_TEST_BROKER={wanted!r}: must be auto, kafka or embedded")
    if wanted == "embedded":
        return BrokerChoice("embedded", "GOAICORE_TEST_BROKER=embedded")
    reason = prepared_or_reason()
    if reason is not None and wanted == "kafka":
        raise KafkaUnavailable(f"GOAICORE_TEST_BROKER=kafka but {reason}")
    return BrokerChoice("embedded", reason) if reason else BrokerChoice("kafka", None)


@dataclass
class SessionBroker:
    """The running session broker: where clients connect and with which profile."""

    bootstrap_servers: str
    profile: BrokerProfile
    apache: LocalKafka | None = None

    def settings(self, data_dir: Path, letter: str, **changes: Any) -> Settings:
        """Settings on this broker, 3 partitions, under a topic prefix of their own
        (``letter`` and a random suffix), with ``changes``."""
        return Settings(
            env={},
            bootstrap_servers=self.bootstrap_servers,
            broker_profile=self.profile,
            topic_prefix=f"{letter}{uuid.uuid4().hex[:12]}",
            partitions=3,
            data_dir=data_dir,
            **changes,
        )


def start_apache_kafka(folder: Path, nodes: int = 1, **overrides: str) -> LocalKafka:
    """A local Apache Kafka with the test broker config (and ``overrides`` on top)."""
    config = {**TEST_BROKER_CONFIG, **overrides}
    return LocalKafka(folder, nodes=nodes, overrides=config).start()


def start_embedded(log_path: Path) -> EmbeddedBroker:
    return EmbeddedBroker(log_path=log_path).start()
