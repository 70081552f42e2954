"""aiokafka clients with the same settings as the kafka-python ones: the broker profile,
the record limit, the security options, and one clear error when no broker answers."""

from __future__ import annotations

import asyncio
from typing import Any, Self

from goaicore.errors import BrokerError, client_errors
from goaicore.extras import needs
from goaicore.kafka.connection import (
    MissingTopicError,
    consumer_options,
    producer_options,
    require_reachable,
)
from goaicore.kafka.profile import client_profile
from goaicore.kafka.security import KafkaSecurityError, aiokafka_options, probe
from goaicore.lifecycle import AsyncRunning
from goaicore.settings import Settings
from goaicore.store.errors import NotAcknowledged


async def start_producer(settings: Settings, **overrides: Any) -> Any:
    """A started AIOKafkaProducer (a TopicTrackingProducer): acks=all, idempotent (but on
    the embedded broker), lz4."""
    with needs("kafka"):
        from goaicore.kafka.aio_producer import TopicTrackingProducer

    options = {
        **producer_options(settings),
        **client_profile(settings).aiokafka_producer,
        **aiokafka_options(settings),
        **overrides,
    }
    await asyncio.to_thread(require_reachable, settings)
    producer = TopicTrackingProducer(**options)
    await _start(producer, settings)
    return producer


async def start_consumer(settings: Settings, *topics: str, **overrides: Any) -> Any:
    """A started AIOKafkaConsumer with the profile's settings; no auto-commit by default."""
    with needs("kafka"):
        from aiokafka import AIOKafkaConsumer  # type: ignore[import-untyped]

    options = {**consumer_options(settings), **aiokafka_options(settings), **overrides}
    await asyncio.to_thread(require_reachable, settings)
    consumer = AIOKafkaConsumer(*topics, **options)
    await _start(consumer, settings)
    return consumer


async def _start(client: Any, settings: Settings) -> None:
    """Start ``client``; on failure stop it (it holds sockets) and raise a BrokerError, or a
    KafkaSecurityError saying what the broker refused when SASL or TLS is the cause."""
    try:
        with client_errors():
            await client.start()
    except BaseException as err:
        await client.stop()
        if isinstance(err, BrokerError) and settings.security_protocol not in (None, "PLAINTEXT"):
            problem = await asyncio.to_thread(probe, settings)
            if problem is not None:
                raise KafkaSecurityError(problem) from None
        raise


async def partitions_of(consumer: Any, topic: str) -> list[Any]:
    """Every partition of ``topic``; MissingTopicError when it does not exist."""
    from aiokafka import TopicPartition

    partitions = await _partition_ids(consumer._client, topic)
    return [TopicPartition(topic, p) for p in partitions]


async def require_topic(producer: Any, topic: str) -> None:
    """MissingTopicError, at once, when ``topic`` does not exist: a producer would
    otherwise wait for it, warning, until its request timeout."""
    await _partition_ids(producer.client, topic)


async def _partition_ids(client: Any, topic: str) -> list[int]:
    with client_errors():
        # Fresh metadata: a client's cached cluster knows only topics it has used.
        cluster = await client.fetch_all_metadata()
    partitions = cluster.partitions_for_topic(topic)
    if not partitions:
        raise MissingTopicError(f"topic {topic} does not exist (is `goaicore dev` running?)")
    return sorted(partitions)


async def stop_all(*clients: Any) -> None:
    """Stop each client that was started (None for one that was not)."""
    for client in clients:
        if client is not None:
            await client.stop()


class ConsumerReader(AsyncRunning):
    """An asyncio reader over one consumer of its own, started in ``start()`` and stopped
    in ``close()``: the snapshot, history and key readers."""

    def __init__(self, settings: Settings | None, topic: str) -> None:
        self.settings = settings or Settings()
        self.topic = self.settings.topic(topic)
        self._consumer: Any = None

    async def start(self) -> Self:
        if self._consumer is None:
            self._consumer = await start_consumer(self.settings)
        return self

    def _started(self) -> Any:
        if self._consumer is None:
            name = type(self).__name__
            raise RuntimeError(f"use `async with {name}(...)`, or await start() first")
        return self._consumer

    async def close(self) -> None:
        consumer, self._consumer = self._consumer, None
        if consumer is not None:
            await consumer.stop()


def broker_down(err: BaseException) -> bool:
    """Whether ``err`` (or an error it came from) is the broker being unreachable or
    timing out: a retriable Kafka error, which a later try may get past."""
    from aiokafka.errors import KafkaTimeoutError  # type: ignore[import-untyped]

    seen: BaseException | None = err
    while seen is not None:
        if getattr(seen, "retriable", False) or isinstance(
            seen, (NotAcknowledged, KafkaTimeoutError)
        ):
            return True
        seen = seen.__cause__ or seen.__context__
    return False
