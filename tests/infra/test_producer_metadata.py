"""The Faust producer always knows where a key of a topic it created goes.

aiokafka keeps metadata only for the topics its client tracks once it tracks
any: a send to a topic it did not know yet narrows every later refresh to the
tracked ones. A table's changelog topic (created by the app, or one that existed before,
like the snapshots topic) may never be sent to before its first write, and a
table (or the router answering which worker owns a key) picks a partition from
that metadata without waiting for it.
"""

from __future__ import annotations

import asyncio
import uuid

import faust
import pytest
from aiokafka.errors import UnknownTopicOrPartitionError  # type: ignore[import-untyped]
from kafka import KafkaAdminClient
from kafka.admin import NewTopic
from kafka.partitioner.default import murmur2

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


def _app(kafka_broker: SessionBroker) -> tuple[faust.App, str]:
    register()
    prefix = f"m{uuid.uuid4().hex[:10]}"
    app = faust.App(
        prefix,
        broker=f"goaicore-kafka://{kafka_broker.bootstrap_servers}",
        topic_replication_factor=1,
    )
    return app, prefix


def test_a_created_topic_keeps_its_partitions_after_a_send_elsewhere(
    kafka_broker: SessionBroker,
) -> None:
    app, prefix = _app(kafka_broker)

    async def run() -> None:
        producer = app.producer
        assert isinstance(producer, SteadyProducer)
        await producer.start()
        try:
            changelog = f"{prefix}-changelog"
            await producer.create_topic(changelog, PARTITIONS, 1, compacting=True)
            before = [producer.key_partition(changelog, key).partition for key in KEYS]
            # A topic this producer has never seen: sending to it makes aiokafka
            # track it and refresh the metadata for the tracked topics alone.
            other = f"{prefix}-other"
            _create_elsewhere(kafka_broker.bootstrap_servers, other)
            await producer.send_and_wait(other, b"k", b"v", None, None, None)
            await producer._ensure_producer().client.force_metadata_update()
            after = [producer.key_partition(changelog, key).partition for key in KEYS]
            assert before == after == [_expected(key) for key in KEYS]
        finally:
            await producer.stop()

    asyncio.run(run())


def test_a_topic_missing_from_the_metadata_uses_its_last_known_partitions(
    kafka_broker: SessionBroker,
) -> None:
    app, prefix = _app(kafka_broker)

    async def run() -> None:
        producer = app.producer
        assert isinstance(producer, SteadyProducer)
        await producer.start()
        try:
            changelog = f"{prefix}-changelog"
            await producer.create_topic(changelog, PARTITIONS, 1, compacting=True)
            other = f"{prefix}-other"
            _create_elsewhere(kafka_broker.bootstrap_servers, other)
            client = producer._ensure_producer().client
            # What a refresh answered by a lagging broker leaves: no such topic.
            await client.set_topics([other])
            assert client.cluster.partitions_for_topic(changelog) is None
            chosen = [producer.key_partition(changelog, key).partition for key in KEYS]
            assert chosen == [_expected(key) for key in KEYS]
            # The lookup asked for the topic again: the next refresh brings it back.
            await client.force_metadata_update()
            assert client.cluster.partitions_for_topic(changelog) == set(range(PARTITIONS))
            with pytest.raises(UnknownTopicOrPartitionError, match="never-created"):
                producer.key_partition(f"{prefix}-never-created", b"k")
        finally:
            await producer.stop()

    asyncio.run(run())


def test_a_topic_that_existed_before_the_start_keeps_its_partitions(
    kafka_broker: SessionBroker,
) -> None:
    app, prefix = _app(kafka_broker)
    existing = f"{prefix}-snapshots"
    _create_elsewhere(kafka_broker.bootstrap_servers, existing, PARTITIONS)

    async def run() -> None:
        producer = app.producer
        assert isinstance(producer, SteadyProducer)
        await producer.start()
        try:
            other = f"{prefix}-other"
            _create_elsewhere(kafka_broker.bootstrap_servers, other)
            await producer.send_and_wait(other, b"k", b"v", None, None, None)
            await producer._ensure_producer().client.force_metadata_update()
            chosen = [producer.key_partition(existing, key).partition for key in KEYS]
            assert chosen == [_expected(key) for key in KEYS]
        finally:
            await producer.stop()

    asyncio.run(run())
