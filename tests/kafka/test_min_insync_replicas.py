"""``create-topics`` sets ``min.insync.replicas``: 2 where a topic has 3 replicas or more,
else 1, or what GOAICORE_MIN_INSYNC_REPLICAS says; an existing topic below that is warned
about and left as it is."""

from __future__ import annotations

import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from goaicore.config import Settings
from goaicore.devstack.worker_process import settings_env
from goaicore.kafka import TOPICS, ensure_topics
from goaicore.kafka.apache import LocalKafka
from goaicore.kafka.connection import make_admin
from tests.kafka.helpers import kafka_settings

pytestmark = [pytest.mark.apache_kafka, pytest.mark.timeout(600)]

TOPIC_CONFIG_SOURCE = "DYNAMIC_TOPIC_CONFIG"  # a topic's own config, not a broker default


def _topic_configs(settings: Settings, names: list[str]) -> dict[str, dict[str, Any]]:
    """Each topic's reported configs as kafka-python gives them: {key: {value, source...}}."""
    from kafka.admin import ConfigResource, ConfigResourceType

    admin = make_admin(settings)
    try:
        described = admin.describe_configs(
            [ConfigResource(ConfigResourceType.TOPIC, name) for name in names],
            config_filter="all",
        )
    finally:
        admin.close()
    return {name: dict(configs) for name, configs in described["topic"].items()}


def _min_insync(settings: Settings) -> dict[str, str]:
    """Each topic's min.insync.replicas, once the broker asked reports every topic's
    configs (one that has not caught up with a new topic's metadata reports none)."""
    names = [settings.topic(t.name) for t in TOPICS]
    deadline = time.monotonic() + 30
    while True:
        reported = _topic_configs(settings, names)
        if all("min.insync.replicas" in reported.get(n, {}) for n in names):
            return {n: str(reported[n]["min.insync.replicas"]["value"]) for n in names}
        assert time.monotonic() < deadline, reported
        time.sleep(0.5)


def _source(settings: Settings, topic: str) -> str:
    name = settings.topic(topic)
    return str(_topic_configs(settings, [name])[name]["min.insync.replicas"].get("config_source"))


def _run_create_topics(settings: Settings) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "goaicore", "create-topics"],
        env=settings_env(settings),
        capture_output=True,
        text=True,
        timeout=180,
    )


def _create_topics(settings: Settings) -> str:
    done = _run_create_topics(settings)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def test_three_replicas_get_two_in_sync_and_create_topics_says_so(
    cluster: LocalKafka, postgres_url: str, tmp_path: Path
) -> None:
    settings = kafka_settings(cluster, postgres_url, tmp_path, replication=3)
    out = _create_topics(settings)
    created = [line for line in out.splitlines() if line.startswith("created")]
    assert len(created) == len(TOPICS), out
    assert all("replication=3 min.insync.replicas=2" in line for line in created), out
    assert set(_min_insync(settings).values()) == {"2"}
    # Set on the topic itself, not inherited from the cluster's default of 2.
    assert _source(settings, "events") == TOPIC_CONFIG_SOURCE


def test_fewer_replicas_get_one_in_sync_even_where_the_cluster_default_is_two(
    cluster: LocalKafka, postgres_url: str, tmp_path: Path
) -> None:
    settings = kafka_settings(cluster, postgres_url, tmp_path, replication=2)
    statuses = ensure_topics(settings)
    assert {(s.replication, s.min_insync_replicas) for s in statuses} == {(2, 1)}
    assert set(_min_insync(settings).values()) == {"1"}


def test_the_brokers_default_replication_is_read_to_choose_min_insync(
    cluster: LocalKafka, postgres_url: str, tmp_path: Path
) -> None:
    settings = kafka_settings(cluster, postgres_url, tmp_path, replication=-1)
    out = _create_topics(settings)  # default.replication.factor is 3 on this cluster
    created = [line for line in out.splitlines() if line.startswith("created")]
    assert len(created) == len(TOPICS), out
    assert all(line.endswith("replication=3 min.insync.replicas=2") for line in created), out
    assert set(_min_insync(settings).values()) == {"2"}


def test_an_existing_topic_below_is_warned_about_and_left_unchanged(
    cluster: LocalKafka, postgres_url: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    from kafka.admin import NewTopic

    settings = kafka_settings(cluster, postgres_url, tmp_path, replication=3)
    admin = make_admin(settings)
    try:
        configs = {
            "cleanup.policy": "delete",
            "retention.ms": "-1",
            "max.message.bytes": "1114112",
            "min.insync.replicas": "1",
        }
        admin.create_topics(
            [NewTopic(settings.topic("events"), settings.partitions, 3, topic_configs=configs)]
        )
    finally:
        admin.close()
    with caplog.at_level("WARNING", logger="goaicore.kafka.topics"):
        statuses = ensure_topics(settings)
    warnings = [r.getMessage() for r in caplog.records if r.name == "goaicore.kafka.topics"]
    assert len(warnings) == 1, warnings
    assert (
        f"topic {settings.topic('events')} has 3 replicas and min.insync.replicas=1" in warnings[0]
    )
    assert "min.insync.replicas=2" in warnings[0]
    assert [s.action for s in statuses if s.name == settings.topic("events")] == ["exists"]
    insync = _min_insync(settings)
    assert insync.pop(settings.topic("events")) == "1"  # never changed
    assert set(insync.values()) == {"2"}


def test_goaicore_min_insync_replicas_sets_another_value_and_create_topics_says_so(
    cluster: LocalKafka, postgres_url: str, tmp_path: Path
) -> None:
    settings = replace(
        kafka_settings(cluster, postgres_url, tmp_path, replication=3), min_insync_replicas=3
    )
    out = _create_topics(settings)
    created = [line for line in out.splitlines() if line.startswith("created")]
    assert len(created) == len(TOPICS), out
    assert all(line.endswith("replication=3 min.insync.replicas=3") for line in created), out
    assert set(_min_insync(settings).values()) == {"3"}
    assert _source(settings, "events") == TOPIC_CONFIG_SOURCE


def test_more_in_sync_replicas_than_the_brokers_default_replication_is_refused(
    cluster: LocalKafka, postgres_url: str, tmp_path: Path
) -> None:
    settings = replace(
        kafka_settings(cluster, postgres_url, tmp_path, replication=-1), min_insync_replicas=4
    )
    done = _run_create_topics(settings)
    assert done.returncode == 3, done.stdout + done.stderr
    assert "GOAICORE_MIN_INSYNC_REPLICAS=4 is more than the topics' 3 replicas" in done.stderr
    assert "Traceback" not in done.stderr
    names = [settings.topic(t.name) for t in TOPICS]
    assert not set(names) & set(_topic_names(settings))  # nothing created


def _topic_names(settings: Settings) -> list[str]:
    admin = make_admin(settings)
    try:
        return list(admin.list_topics())
    finally:
        admin.close()
