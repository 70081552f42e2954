"""Create goaicore's topics under the configured prefix, idempotently.

Every topic is keyed by ``conversation_id`` and has the same partition count,
so a conversation's events, snapshot, requests, replies and reply stream are
co-partitioned and one worker owns the conversation. An existing topic with another
partition count is an error: silently accepting it would break co-partitioning.

A topic is created with ``min.insync.replicas`` 2 where its replication factor is 3
or more (an acknowledged write survives the loss of any one broker, and writes go on
while one is down), else 1, unless GOAICORE_MIN_INSYNC_REPLICAS says otherwise. An
existing topic below that is warned about, never changed.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import Any, Literal

from goaicore.errors import EXIT_CONFIG, BrokerError, ConfigError
from goaicore.extras import needs
from goaicore.kafka.limits import RECORD_HEADROOM, max_batch_bytes, topic_max_message_bytes
from goaicore.settings import Settings

log = logging.getLogger(__name__)

_FOREVER = "-1"


@dataclass(frozen=True)
class TopicSpec:
    """One of goaicore's topics: its short name, its purpose and its configs."""

    name: str
    purpose: str
    configs: dict[str, str] = field(default_factory=dict)
    erasure: Literal["sealed", "expires", "compacted", "kept"] = "kept"
    """How an erased conversation's content leaves it: sealed (unreadable once its key
    is gone), expires or is compacted away within the erasure window, or kept."""


TOPICS: tuple[TopicSpec, ...] = (
    TopicSpec(
        "events",
        "the log: every conversation event; never expires",
        {"cleanup.policy": "delete", "retention.ms": _FOREVER, "retention.bytes": "-1"},
        "sealed",
    ),
    TopicSpec(
        "snapshots",
        "latest folded state per conversation; the fold table's changelog",
        {"cleanup.policy": "compact", "min.compaction.lag.ms": "0"},
        "compacted",
    ),
    TopicSpec(
        "keys",
        "each conversation's data key, wrapped; a tombstone once erased",
        {"cleanup.policy": "compact", "min.compaction.lag.ms": "0"},
        "compacted",
    ),
    TopicSpec(
        "intake",
        "events from publishers, in the clear until their worker seals them into events",
        {"cleanup.policy": "delete"},
        "expires",
    ),
    TopicSpec("requests", "chat requests", {"cleanup.policy": "delete"}, "expires"),
    TopicSpec("replies", "chat replies", {"cleanup.policy": "delete"}, "expires"),
    TopicSpec(
        "reply-stream",
        "streamed reply text and tool progress, as it is generated",
        {"cleanup.policy": "delete"},
        "expires",
    ),
    TopicSpec(
        "dead-letters",
        "records that could not be decoded or applied, with the reason",
        # A record set aside may hold anything, in the clear: it expires like requests
        # (the projector keeps a copy in PostgreSQL, which an erasure redacts).
        {"cleanup.policy": "delete"},
        "expires",
    ),
)


class TopicMismatchError(BrokerError, RuntimeError):
    """An existing topic disagrees with what goaicore needs (partitions, cleanup policy)."""

    exit_code = EXIT_CONFIG


class TopicsNotReadyError(BrokerError, RuntimeError):
    """Topics exist but not every partition has a leader within the timeout."""


@dataclass(frozen=True)
class TopicStatus:
    name: str
    partitions: int
    action: Literal["created", "exists"]
    replication: int | None = None
    """The replication factor it was created with (None: the broker's default, unknown)."""
    min_insync_replicas: int | None = None
    """The ``min.insync.replicas`` it was created with (None: the broker's default)."""


def min_insync_replicas(replication: int, settings: Settings) -> int:
    """What goaicore sets for a topic of ``replication`` replicas: GOAICORE_MIN_INSYNC_REPLICAS
    when given (never on the embedded broker, which has no replication), else 2 from 3
    replicas on, else 1."""
    if settings.min_insync_replicas is not None and not settings.embedded_broker:
        return settings.min_insync_replicas
    return 2 if replication >= 3 else 1


def ensure_topics(settings: Settings, timeout_s: float = 30.0) -> list[TopicStatus]:
    """Create any missing topic and check the existing ones; safe to run again.

    A cluster still starting or electing a controller answers with transient
    errors (a controller not yet in the client's metadata is UnknownBrokerId);
    the whole idempotent pass then runs again on a fresh client, until
    ``timeout_s``. Anything else (a bad replication factor, a mismatch) is raised.
    """
    with needs("kafka"):
        from kafka.errors import KafkaError, UnknownBrokerIdError

    from goaicore.kafka.connection import make_admin

    deadline = time.monotonic() + timeout_s
    while True:
        admin = make_admin(
            settings,
            request_timeout_ms=int(timeout_s * 1000),
            bootstrap_timeout_ms=int(timeout_s * 1000),
        )
        try:
            return _ensure(admin, settings, timeout_s)
        except KafkaError as err:
            transient = err.retriable or isinstance(err, UnknownBrokerIdError)
            if not transient or time.monotonic() > deadline:
                raise
        finally:
            admin.close()
        time.sleep(0.5)


def _ensure(admin: Any, settings: Settings, timeout_s: float) -> list[TopicStatus]:
    with needs("kafka"):
        from kafka.admin import NewTopic
    with needs("kafka"):
        from kafka.errors import TopicAlreadyExistsError

    existing = _partition_counts(admin, [settings.topic(t.name) for t in TOPICS])
    replication = 1 if settings.embedded_broker else settings.replication_factor
    resolved = replication if replication != -1 else _default_replication(admin)
    min_insync = min_insync_replicas(resolved, settings) if resolved is not None else None
    if min_insync is not None and resolved is not None and min_insync > resolved:
        raise ConfigError(
            f"GOAICORE_MIN_INSYNC_REPLICAS={min_insync} is more than the topics' "
            f"{resolved} replicas (the brokers' default.replication.factor): no write "
            "would ever be acknowledged; lower it or set GOAICORE_REPLICATION_FACTOR"
        )
    # The embedded broker has one node and no replication: it is given no setting for it.
    extra = (
        {}
        if min_insync is None or settings.embedded_broker
        else {"min.insync.replicas": str(min_insync)}
    )
    statuses: list[TopicStatus] = []
    for spec in TOPICS:
        name = settings.topic(spec.name)
        if name in existing:
            _check(settings, name, existing[name])
            statuses.append(TopicStatus(name, existing[name], "exists"))
            continue
        new = NewTopic(
            name,
            settings.partitions,
            replication,
            topic_configs={**topic_configs(spec, settings), **extra},
        )
        try:
            admin.create_topics([new], timeout_ms=int(timeout_s * 1000))
            statuses.append(TopicStatus(name, settings.partitions, "created", resolved, min_insync))
        except TopicAlreadyExistsError:
            # Created concurrently (by another process, or by an earlier pass): check it.
            count = _wait_led(admin, [name], time.monotonic() + timeout_s)[name]
            _check(settings, name, count)
            statuses.append(TopicStatus(name, count, "exists"))
    _wait_led(admin, [s.name for s in statuses], time.monotonic() + timeout_s)
    _check_configs(admin, settings)
    return statuses


def topic_configs(spec: TopicSpec, settings: Settings) -> dict[str, str]:
    """The configs a topic is created with: its own, the batches it accepts (those of
    goaicore's producers and of any client at its defaults: see goaicore.kafka.limits),
    and what bounds the time an erased conversation's content stays on its disks."""
    return {
        **spec.configs,
        "max.message.bytes": str(topic_max_message_bytes(settings)),
        **erasure_configs(spec.erasure, settings),
    }


def erasure_configs(erasure: str, settings: Settings) -> dict[str, str]:
    """Within ``GOAICORE_ERASURE_WINDOW``: a transient topic's segments roll and expire; a
    compacted one rolls its active segment on the next append past the window (Kafka
    lowers the roll time to the compaction lag), compacts it, and drops tombstones;
    and a file compaction or retention replaced leaves the disk within a minute."""
    window = str(round(settings.erasure_window * 1000))
    delete_delay = str(min(60_000, round(settings.erasure_window * 1000)))
    if erasure == "expires":
        return {"retention.ms": window, "segment.ms": window, "file.delete.delay.ms": delete_delay}
    if erasure == "compacted":
        return {
            "max.compaction.lag.ms": window,
            "delete.retention.ms": window,
            "file.delete.delay.ms": delete_delay,
        }
    return {}


def _default_replication(admin: Any) -> int | None:
    """The brokers' ``default.replication.factor`` (what -1 creates), or None when no
    broker reports it (the topic then keeps the broker's ``min.insync.replicas``)."""
    with needs("kafka"):
        from kafka.admin import ConfigResource, ConfigResourceType
    try:
        broker = admin.describe_cluster()["brokers"][0]
        node = str(broker.get("broker_id", broker.get("node_id")))
        resource = ConfigResource(ConfigResourceType.BROKER, node)
        described = admin.describe_configs([resource], config_filter="all")
        factor = (
            _reported_configs(described, "broker")
            .get(node, {})
            .get("default.replication.factor", "")
        )
    except Exception:
        return None
    return int(factor) if factor.isdigit() else None


def _replication(admin: Any, names: list[str]) -> dict[str, int]:
    """The smallest replica count of any partition of each topic."""
    out: dict[str, int] = {}
    try:
        described = admin.describe_topics(names)
    except Exception:
        return out
    for topic in described:
        counts = [len(p.get("replica_nodes", [])) for p in topic.get("partitions", [])]
        if counts and min(counts) > 0:
            out[topic["topic"] if "topic" in topic else topic["name"]] = min(counts)
    return out


def _check(settings: Settings, name: str, partitions: int) -> None:
    if partitions != settings.partitions:
        raise TopicMismatchError(
            f"topic {name} has {partitions} partitions but GOAICORE_PARTITIONS is "
            f"{settings.partitions}; co-partitioning needs them equal "
            "(use the existing count, or another GOAICORE_TOPIC_PREFIX)"
        )


def _wait_led(admin: Any, names: list[str], deadline: float) -> dict[str, int]:
    """Partition counts of ``names`` once every partition of each has a leader.

    Apache Kafka answers CreateTopics before every broker's metadata shows the
    topic, so a client started right after could find it missing.
    """
    while True:
        try:
            described = admin.describe_topics(names)
        except Exception:  # UnknownTopicOrPartition while the metadata catches up
            described = []
        led = {
            topic["name"]: len(topic["partitions"])
            for topic in described
            if topic.get("error_code", 0) == 0
            and topic["partitions"]
            and all(p.get("leader_id", -1) >= 0 for p in topic["partitions"])
        }
        if set(names) <= set(led) or time.monotonic() > deadline:
            missing = sorted(set(names) - set(led))
            if missing:
                raise TopicsNotReadyError(
                    f"topics {', '.join(missing)} exist but not every partition has a leader yet"
                )
            return led
        time.sleep(0.1)


def _partition_counts(admin: Any, names: list[str]) -> dict[str, int]:
    present = set(admin.list_topics())
    wanted = [n for n in names if n in present]
    if not wanted:
        return {}
    counts: dict[str, int] = {}
    for topic in admin.describe_topics(wanted):
        counts[topic["topic"] if "topic" in topic else topic["name"]] = len(topic["partitions"])
    return counts


def _check_configs(admin: Any, settings: Settings) -> None:
    """Check cleanup.policy and max.message.bytes where the broker reports configs.

    The embedded broker reports none. A topic that accepts smaller batches than
    goaicore's producers may send would refuse records the clients let through: an
    error. One that accepts those but less than a Kafka client at its defaults may
    send (a topic created before goaicore made them larger) is said in a warning: it
    refuses whole batches of such producers, so raise it.
    """
    with needs("kafka"):
        from kafka.admin import ConfigResource, ConfigResourceType

    resources = [ConfigResource(ConfigResourceType.TOPIC, settings.topic(t.name)) for t in TOPICS]
    try:
        described = admin.describe_configs(resources, config_filter="all")
    except Exception:
        return
    reported = _reported_configs(described)
    replication = _replication(admin, [settings.topic(t.name) for t in TOPICS])
    needed = max_batch_bytes(settings)
    wanted_size = topic_max_message_bytes(settings)
    for spec in TOPICS:
        name = settings.topic(spec.name)
        configs = reported.get(name, {})
        policy = configs.get("cleanup.policy")
        wanted = spec.configs.get("cleanup.policy")
        if policy is not None and wanted is not None and policy != wanted:
            raise TopicMismatchError(
                f"topic {name} has cleanup.policy={policy}, goaicore needs {wanted}"
            )
        limit = configs.get("max.message.bytes")
        if limit is not None and limit.isdigit() and int(limit) < needed:
            raise TopicMismatchError(
                f"topic {name} has max.message.bytes={limit}, below the {needed} that "
                f"GOAICORE_MAX_RECORD_BYTES={settings.max_record_bytes} needs (record limit plus "
                f"{RECORD_HEADROOM} bytes of headroom): raise the topic's max.message.bytes "
                "or lower GOAICORE_MAX_RECORD_BYTES"
            )
        if limit is not None and limit.isdigit() and int(limit) < wanted_size:
            log.warning(
                "topic %s has max.message.bytes=%s: a producer at librdkafka's or Java's "
                "defaults may send batches of up to 1 MiB, which it refuses whole; goaicore "
                "creates topics with %d (raise it with kafka-configs --alter "
                "--add-config max.message.bytes=%d)",
                name,
                limit,
                wanted_size,
                wanted_size,
            )
        insync = configs.get("min.insync.replicas")
        replicas = replication.get(name)
        if insync is not None and insync.isdigit() and replicas is not None:
            floor = min_insync_replicas(replicas, settings)
            if int(insync) < floor:
                log.warning(
                    "topic %s has %d replicas and min.insync.replicas=%s: an acknowledged "
                    "write may live on one broker only; goaicore creates such topics with %d "
                    "(raise it with kafka-configs --alter --add-config "
                    "min.insync.replicas=%d; goaicore never changes an existing topic)",
                    name,
                    replicas,
                    insync,
                    floor,
                    floor,
                )


def _reported_configs(described: Any, kind: str = "topic") -> dict[str, dict[str, str]]:
    """Normalise kafka-python's describe_configs answer to {resource: {key: value}}."""
    out: dict[str, dict[str, str]] = {}
    if isinstance(described, dict) and kind in described:
        for topic, configs in described[kind].items():
            if isinstance(configs, dict):
                out[topic] = {
                    str(k): str(v.get("value") if isinstance(v, dict) else v)
                    for k, v in configs.items()
                }
    return out
