"""Kafka clients built from Settings, with the broker profile and security applied in one place.

Every kafka-python client goaicore makes comes from here: ``make_producer``,
``make_consumer`` and ``make_admin`` add the broker profile's settings and the
SSL/SASL options of ``goaicore.kafka.security``, and turn a connection refused
for its credentials or TLS into one ``KafkaSecurityError`` line.
"""

from __future__ import annotations

import socket
from typing import Any

from goaicore.errors import EXIT_CONFIG, BrokerError, client_errors
from goaicore.extras import needs
from goaicore.kafka.limits import max_batch_bytes
from goaicore.kafka.probe import kafka_api_versions_error
from goaicore.kafka.profile import client_profile
from goaicore.kafka.security import explain_connect_failures, kafka_python_options
from goaicore.settings import Settings

REACH_TIMEOUT = 5.0
"""Seconds to wait for a TCP connection to any bootstrap server before giving up."""


class BrokerUnreachableError(BrokerError, ConnectionError):
    """No bootstrap server accepts a connection: Kafka is not running there."""


def require_reachable(settings: Settings, timeout: float = REACH_TIMEOUT) -> None:
    """Return once one bootstrap server answers; else one clear error.

    kafka-python would retry for 30 s and end in a traceback; a closed port is
    known at once, an unroutable host or something other than Kafka (asked for
    its API versions, except on a TLS listener, which only takes the connection)
    within ``timeout``.
    """
    servers = settings.require_bootstrap()
    tls = "SSL" in (settings.security_protocol or "PLAINTEXT")
    errors = []
    for server in servers.split(","):
        host, _, port = server.strip().rpartition(":")
        try:
            address = (host.strip("[]"), int(port))
        except ValueError:
            errors.append(f"{server.strip()}: {port!r} is not a port")
            continue
        problem = (
            _connect_error(address, timeout) if tls else kafka_api_versions_error(*address, timeout)
        )
        if problem is None:
            return
        errors.append(f"{server.strip()}: {problem}")
    raise BrokerUnreachableError(
        f"no Kafka broker answers at {servers} ({'; '.join(errors)}); is Kafka running? "
        "Set KAFKA_BOOTSTRAP_SERVERS, or start the dev stack with `make run`"
    )


def _connect_error(address: tuple[str, int], timeout: float) -> str | None:
    """None when ``address`` accepts a TCP connection, else why not."""
    try:
        with socket.create_connection(address, timeout=timeout):
            return None
    except OSError as err:
        return f"{type(err).__name__}: {err}"


def producer_options(settings: Settings) -> dict[str, Any]:
    """What every producer of ours is given, kafka-python's and aiokafka's alike."""
    return {
        "bootstrap_servers": settings.require_bootstrap(),
        "client_id": "goaicore",
        "max_request_size": max_batch_bytes(settings),
    }


def consumer_options(settings: Settings) -> dict[str, Any]:
    """What every consumer of ours is given (no auto-commit, the profile's timings),
    kafka-python's and aiokafka's alike."""
    return {
        "bootstrap_servers": settings.require_bootstrap(),
        "client_id": "goaicore",
        "enable_auto_commit": False,
        "fetch_max_wait_ms": 100,
        **client_profile(settings).consumer,
    }


def make_producer(settings: Settings, **overrides: Any) -> Any:
    """A kafka-python producer: acks=all, idempotent, the profile's settings."""
    with needs("kafka"):
        from kafka import KafkaProducer

    options = {
        **producer_options(settings),
        **client_profile(settings).producer,
        **kafka_python_options(settings),
        **overrides,
    }
    require_reachable(settings)
    with explain_connect_failures(settings):
        return KafkaProducer(**options)


def make_consumer(settings: Settings, **overrides: Any) -> Any:
    """A kafka-python consumer with the profile's settings; no auto-commit by default."""
    with needs("kafka"):
        from kafka import KafkaConsumer

    options = {**consumer_options(settings), **kafka_python_options(settings), **overrides}
    require_reachable(settings)
    with explain_connect_failures(settings):
        return KafkaConsumer(**options)


def make_admin(settings: Settings, **overrides: Any) -> Any:
    """A kafka-python admin client with the settings' security."""
    with needs("kafka"):
        from kafka import KafkaAdminClient

    options: dict[str, Any] = {
        "bootstrap_servers": settings.require_bootstrap(),
        "client_id": "goaicore-admin",
        **kafka_python_options(settings),
        **overrides,
    }
    require_reachable(settings)
    with explain_connect_failures(settings):
        return KafkaAdminClient(**options)


class MissingTopicError(BrokerError, LookupError):
    """A topic goaicore needs does not exist yet."""

    exit_code = EXIT_CONFIG


def topic_partitions(consumer: Any, topic: str) -> list[Any]:
    """Every partition of ``topic`` as TopicPartitions; MissingTopicError when absent."""
    with client_errors():
        with needs("kafka"):
            from kafka import TopicPartition

        partitions = consumer.partitions_for_topic(topic)
        if not partitions:
            raise MissingTopicError(f"topic {topic} does not exist (is `goaicore dev` running?)")
        return [TopicPartition(topic, p) for p in sorted(partitions)]
