"""The Faust producer always knows where a key of a topic it created goes.

aiokafka keeps metadata only for the topics its client tracks once it tracks
any: a send to a topic it did not know yet narrows every later refresh to the
tracked ones. A table's changelog topic (created by the app, or one that existed before,
like the snapshots topic) may never be sent to before its first write, and a
table (or the router answering which worker owns a key) picks a partition from
that metadata without waiting for it, and a batch queued for a topic that drops out
of it would wait for a leader no refresh brings back.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path

import faust
import pytest
from aiokafka.errors import UnknownTopicOrPartitionError  # type: ignore[import-untyped]
from kafka import KafkaAdminClient
from kafka.admin import NewTopic
from kafka.partitioner.default import murmur2

from goaicore.kafka.aio_connection import start_producer
from goaicore.kafka.faust import register
from goaicore.kafka.faust.transport import SteadyProducer
from tests.brokers import SessionBroker

PARTITIONS = 5
KEYS = [f"conversation-{n}".encode() for n in range(40)]


def _expected(key: bytes) -> int:
    """Kafka's default partitioner: murmur2 of the key over every partition."""
    return int(murmur2(key) & 0x7FFFFFFF) % PARTITIONS


def _create_elsewhere(bootstrap: str, topic: str, partitions: int = 1) -> None:
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        admin.create_topics([NewTopic(topic, partitions, 1)])
    finally:
        admin.close()


Scenario = Callable[[SteadyProducer, str], Awaitable[None]]


LINGER = 2.0
"""Seconds a queued batch waits before it is sent: long enough for a refresh to land."""

DELIVERY_TIMEOUT = 60.0
"""Seconds to wait for a delivery that takes milliseconds (a lost batch waits 20 minutes)."""


def _run(
    kafka_broker: SessionBroker,
    scenario: Scenario,
    existing: str | None = None,
    linger: float | None = None,
) -> None:
    """Run ``scenario(producer, prefix)`` with a started producer of a fresh Faust app;
    ``existing`` names a topic (after the prefix) created before the producer starts."""
    register()
    prefix = f"m{uuid.uuid4().hex[:10]}"
    if existing is not None:
        _create_elsewhere(kafka_broker.bootstrap_servers, f"{prefix}-{existing}", PARTITIONS)
    app = faust.App(
        prefix,
        broker=f"goaicore-kafka://{kafka_broker.bootstrap_servers}",
        topic_replication_factor=1,
        producer_linger=linger,  # None: Faust's own
    )

    async def run() -> None:
        producer = app.producer
        assert isinstance(producer, SteadyProducer)
        await producer.start()
        try:
            await scenario(producer, prefix)
        finally:
            await producer.stop()

    asyncio.run(run())


async def _send_elsewhere(producer: SteadyProducer, topic: str, bootstrap: str) -> None:
    """Send to a topic this producer has never seen: aiokafka then tracks it and
    refreshes the metadata for the tracked topics alone."""
    _create_elsewhere(bootstrap, topic)
    await producer.send_and_wait(topic, b"k", b"v", None, None, None)
    await producer._ensure_producer().client.force_metadata_update()


def _chosen(producer: SteadyProducer, topic: str) -> list[int]:
    return [producer.key_partition(topic, key).partition for key in KEYS]


def test_a_created_topic_keeps_its_partitions_after_a_send_elsewhere(
    kafka_broker: SessionBroker,
) -> None:
    async def scenario(producer: SteadyProducer, prefix: str) -> None:
        changelog = f"{prefix}-changelog"
        await producer.create_topic(changelog, PARTITIONS, 1, compacting=True)
        before = _chosen(producer, changelog)
        await _send_elsewhere(producer, f"{prefix}-other", kafka_broker.bootstrap_servers)
        assert before == _chosen(producer, changelog) == [_expected(key) for key in KEYS]

    _run(kafka_broker, scenario)


def test_a_topic_missing_from_the_metadata_uses_its_last_known_partitions(
    kafka_broker: SessionBroker,
) -> None:
    async def scenario(producer: SteadyProducer, prefix: str) -> None:
        changelog = f"{prefix}-changelog"
        await producer.create_topic(changelog, PARTITIONS, 1, compacting=True)
        other = f"{prefix}-other"
        _create_elsewhere(kafka_broker.bootstrap_servers, other)
        client = producer._ensure_producer().client
        # What a refresh answered by a lagging broker leaves: no such topic.
        await client.set_topics([other])
        assert client.cluster.partitions_for_topic(changelog) is None
        assert _chosen(producer, changelog) == [_expected(key) for key in KEYS]
        # The lookup asked for the topic again: the next refresh brings it back.
        await client.force_metadata_update()
        assert client.cluster.partitions_for_topic(changelog) == set(range(PARTITIONS))
        with pytest.raises(UnknownTopicOrPartitionError, match="never-created"):
            producer.key_partition(f"{prefix}-never-created", b"k")

    _run(kafka_broker, scenario)


def test_a_topic_that_existed_before_the_start_keeps_its_partitions(
    kafka_broker: SessionBroker,
) -> None:
    async def scenario(producer: SteadyProducer, prefix: str) -> None:
        await _send_elsewhere(producer, f"{prefix}-other", kafka_broker.bootstrap_servers)
        assert _chosen(producer, f"{prefix}-snapshots") == [_expected(key) for key in KEYS]

    _run(kafka_broker, scenario, existing="snapshots")


@pytest.mark.parametrize("how", ["send", "send_batches"])
def test_a_batch_queued_for_a_topic_seen_only_in_a_full_fetch_is_delivered(
    kafka_broker: SessionBroker, how: str
) -> None:
    """The batch waits (linger) while a send to a new topic narrows the refresh to the
    tracked topics; the queued batch's topic is one of them."""

    async def scenario(producer: SteadyProducer, prefix: str) -> None:
        snapshots, other = f"{prefix}-snapshots", f"{prefix}-other"
        client = producer._ensure_producer().client
        await client.force_metadata_update()  # every topic: known, and not tracked
        assert client.cluster.partitions_for_topic(snapshots) == set(range(PARTITIONS))
        _create_elsewhere(kafka_broker.bootstrap_servers, other)
        if how == "send":
            delivery = await producer.send(snapshots, b"k", b"v", 1, None, None)
        else:
            (delivery,) = await producer.send_in_batches(snapshots, 1, [(b"k", b"v", None)])
        await producer.send_and_wait(other, b"k", b"v", None, None, None)
        await client.force_metadata_update()
        metadata = await asyncio.wait_for(delivery, DELIVERY_TIMEOUT)
        assert (metadata.topic, metadata.partition) == (snapshots, 1)

    _run(kafka_broker, scenario, existing="snapshots", linger=LINGER)


def test_a_client_producer_delivers_a_queued_batch_after_a_send_elsewhere(
    kafka_broker: SessionBroker, tmp_path: Path
) -> None:
    """The same for the producer the clients (publisher, chat client) start."""
    settings = kafka_broker.settings(tmp_path, "m")
    first, second = settings.topic("first"), settings.topic("second")
    _create_elsewhere(kafka_broker.bootstrap_servers, first)

    async def run() -> None:
        producer = await start_producer(settings, linger_ms=int(LINGER * 1000))
        try:
            await producer.client.force_metadata_update()  # every topic, none tracked
            _create_elsewhere(kafka_broker.bootstrap_servers, second)
            delivery = await producer.send(first, b"v", partition=0)
            await producer.send_and_wait(second, b"v", partition=0)
            await producer.client.force_metadata_update()
            metadata = await asyncio.wait_for(delivery, DELIVERY_TIMEOUT)
            assert (metadata.topic, metadata.partition, metadata.offset) == (first, 0, 0)
        finally:
            await producer.stop()

    asyncio.run(run())
