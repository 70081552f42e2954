"""Create goaicore's topics under the configured prefix, idempotently.

Every topic is keyed by ``conversation_id`` and has the same partition count,
so a conversation's events, snapshot, requests and replies are co-partitioned
and one worker owns the conversation. An existing topic with another partition
count is an error: silently accepting it would break co-partitioning.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from goaicore.config import Settings

_FOREVER = "-1"
_WEEK_MS = str(7 * 24 * 3600 * 1000)


@dataclass(frozen=True)
class TopicSpec:
    """One of goaicore's topics: its short name, its purpose and its configs."""

    name: str
    purpose: str
    configs: dict[str, str] = field(default_factory=dict)


TOPICS: tuple[TopicSpec, ...] = (
    TopicSpec(
        "events",
        "the log: every conversation event; never expires",
        {"cleanup.policy": "delete", "retention.ms": _FOREVER, "retention.bytes": "-1"},
    ),
    TopicSpec(
        "snapshots",
        "latest folded state per conversation; the fold table's changelog",
        {"cleanup.policy": "compact", "min.compaction.lag.ms": "0"},
    ),
    TopicSpec("requests", "chat requests", {"cleanup.policy": "delete", "retention.ms": _WEEK_MS}),
    TopicSpec("replies", "chat replies", {"cleanup.policy": "delete", "retention.ms": _WEEK_MS}),
    TopicSpec(
        "dead-letters",
        "records that could not be decoded or applied, with the reason",
        {"cleanup.policy": "delete", "retention.ms": _FOREVER},
    ),
)


class TopicMismatchError(RuntimeError):
    """An existing topic disagrees with what goaicore needs (partitions, cleanup policy)."""


@dataclass(frozen=True)
class TopicStatus:
    name: str
    partitions: int
    action: Literal["created", "exists"]


def ensure_topics(settings: Settings, timeout_s: float = 30.0) -> list[TopicStatus]:
    """Create any missing topic and check the existing ones; safe to run again."""
    from kafka import KafkaAdminClient
    from kafka.admin import NewTopic
    from kafka.errors import TopicAlreadyExistsError

    admin = KafkaAdminClient(
        bootstrap_servers=settings.require_bootstrap(),
        request_timeout_ms=int(timeout_s * 1000),
        bootstrap_timeout_ms=int(timeout_s * 1000),
        client_id="goaicore-admin",
    )
    try:
        existing = _partition_counts(admin, [settings.topic(t.name) for t in TOPICS])
        statuses: list[TopicStatus] = []
        for spec in TOPICS:
            name = settings.topic(spec.name)
            if name in existing:
                _check(settings, name, existing[name])
                statuses.append(TopicStatus(name, existing[name], "exists"))
                continue
            replication = 1 if settings.embedded_broker else settings.replication_factor
            new = NewTopic(
                name,
                settings.partition_count,
                replication,
                topic_configs=dict(spec.configs),
            )
            try:
                admin.create_topics([new], timeout_ms=int(timeout_s * 1000))
                statuses.append(TopicStatus(name, settings.partition_count, "created"))
            except TopicAlreadyExistsError:
                # Created concurrently by another process: check it like any other.
                count = _partition_counts(admin, [name])[name]
                _check(settings, name, count)
                statuses.append(TopicStatus(name, count, "exists"))
        _check_cleanup_policies(admin, settings)
        return statuses
    finally:
        admin.close()


def _check(settings: Settings, name: str, partitions: int) -> None:
    if partitions != settings.partition_count:
        raise TopicMismatchError(
            f"topic {name} has {partitions} partitions but GOAICORE_PARTITIONS is "
            f"{settings.partition_count}; co-partitioning needs them equal "
            "(use the existing count, or another GOAICORE_TOPIC_PREFIX)"
        )


def _partition_counts(admin: Any, names: list[str]) -> dict[str, int]:
    present = set(admin.list_topics())
    wanted = [n for n in names if n in present]
    if not wanted:
        return {}
    counts: dict[str, int] = {}
    for topic in admin.describe_topics(wanted):
        counts[topic["topic"] if "topic" in topic else topic["name"]] = len(topic["partitions"])
    return counts


def _check_cleanup_policies(admin: Any, settings: Settings) -> None:
    """Check cleanup.policy where the broker reports configs (the embedded one reports none)."""
    from kafka.admin import ConfigResource, ConfigResourceType

    resources = [ConfigResource(ConfigResourceType.TOPIC, settings.topic(t.name)) for t in TOPICS]
    try:
        described = admin.describe_configs(resources, config_filter="all")
    except Exception:
        return
    reported = _reported_configs(described)
    for spec in TOPICS:
        name = settings.topic(spec.name)
        policy = reported.get(name, {}).get("cleanup.policy")
        wanted = spec.configs.get("cleanup.policy")
        if policy is not None and wanted is not None and policy != wanted:
            raise TopicMismatchError(
                f"topic {name} has cleanup.policy={policy}, goaicore needs {wanted}"
            )


def _reported_configs(described: Any) -> dict[str, dict[str, str]]:
    """Normalise kafka-python's describe_configs answer to {topic: {key: value}}."""
    out: dict[str, dict[str, str]] = {}
    if isinstance(described, dict) and "topic" in described:
        for topic, configs in described["topic"].items():
            if isinstance(configs, dict):
                out[topic] = {
                    str(k): str(v.get("value") if isinstance(v, dict) else v)
                    for k, v in configs.items()
                }
    return out
