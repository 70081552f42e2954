"""Topic admin: every topic, idempotent creation, mismatches are errors."""

from __future__ import annotations

import pytest
from kafka import KafkaAdminClient

from goaicore.config import Settings
from goaicore.kafka import TOPICS, TopicMismatchError, ensure_topics
from goaicore.kafka.topics import topic_configs


def _partition_counts(settings: Settings) -> dict[str, int]:
    admin = KafkaAdminClient(bootstrap_servers=settings.require_bootstrap())
    try:
        names = [n for n in admin.list_topics() if n.startswith(settings.topic_prefix + ".")]
        return {t["name"]: len(t["partitions"]) for t in admin.describe_topics(names)}
    finally:
        admin.close()


def test_creates_every_topic_under_the_prefix(settings: Settings) -> None:
    statuses = ensure_topics(settings)
    names = (
        "events",
        "snapshots",
        "keys",
        "intake",
        "requests",
        "replies",
        "reply-stream",
        "dead-letters",
    )
    expected = {f"{settings.topic_prefix}.{name}" for name in names}
    assert {s.name for s in statuses} == expected
    assert all(s.action == "created" for s in statuses)
    assert _partition_counts(settings) == dict.fromkeys(expected, 3)


@pytest.mark.apache_kafka
def test_one_replica_gets_min_insync_replicas_one(settings: Settings) -> None:
    from kafka.admin import ConfigResource, ConfigResourceType

    statuses = ensure_topics(settings.with_overrides(replication_factor=1))
    assert {(s.replication, s.min_insync_replicas) for s in statuses} == {(1, 1)}
    admin = KafkaAdminClient(bootstrap_servers=settings.require_bootstrap())
    try:
        described = admin.describe_configs(
            [ConfigResource(ConfigResourceType.TOPIC, settings.topic(t.name)) for t in TOPICS],
            config_filter="all",
        )
    finally:
        admin.close()
    assert {
        (configs["min.insync.replicas"]["value"], configs["min.insync.replicas"]["config_source"])
        for configs in described["topic"].values()
    } == {("1", "DYNAMIC_TOPIC_CONFIG")}


def test_creating_twice_changes_nothing(settings: Settings) -> None:
    ensure_topics(settings)
    again = ensure_topics(settings)
    assert [s.action for s in again] == ["exists"] * len(TOPICS)
    assert set(_partition_counts(settings).values()) == {3}


def test_other_partition_count_is_a_clear_error(settings: Settings) -> None:
    ensure_topics(settings)
    with pytest.raises(TopicMismatchError) as caught:
        ensure_topics(settings.with_overrides(partitions=5))
    message = str(caught.value)
    assert f"{settings.topic_prefix}.events has 3 partitions" in message
    assert "GOAICORE_PARTITIONS is 5" in message
    assert set(_partition_counts(settings).values()) == {3}  # nothing was changed


def test_snapshots_topic_is_compacted_and_the_log_never_expires() -> None:
    specs = {spec.name: spec.configs for spec in TOPICS}
    assert specs["snapshots"]["cleanup.policy"] == "compact"
    assert specs["events"]["retention.ms"] == "-1"
    assert specs["events"]["cleanup.policy"] == "delete"


def test_the_erasure_window_bounds_every_topic_that_holds_content_in_the_clear() -> None:
    window = Settings(env={}, erasure_window=3600)
    configs = {spec.name: topic_configs(spec, window) for spec in TOPICS}
    for transient in ("intake", "requests", "replies", "reply-stream", "dead-letters"):
        assert configs[transient]["retention.ms"] == configs[transient]["segment.ms"] == "3600000"
    for compacted in ("snapshots", "keys"):
        assert configs[compacted]["max.compaction.lag.ms"] == "3600000"
        assert configs[compacted]["delete.retention.ms"] == "3600000"
        assert configs[compacted]["file.delete.delay.ms"] == "60000"
    assert configs["events"]["retention.ms"] == "-1"  # sealed instead
    assert "max.compaction.lag.ms" not in configs["events"]
