"""One record limit: GOAICORE_MAX_RECORD_BYTES, the producers' max request size and the
topics' max.message.bytes agree, and a record over it is refused before it is sent."""

from __future__ import annotations

import subprocess
import sys

import pytest
from kafka import KafkaProducer, TopicPartition
from kafka.admin import ConfigResource, ConfigResourceType
from kafka.errors import MessageSizeTooLargeError

from goaicore.clients import EventPublisher, HistoryReader, InvalidInputError
from goaicore.config import Settings
from goaicore.devstack.worker_process import settings_env
from goaicore.kafka import TOPICS, TopicMismatchError, ensure_topics
from goaicore.kafka.connection import make_admin, make_consumer, make_producer
from goaicore.kafka.limits import RECORD_HEADROOM, max_batch_bytes
from goaicore.kafka.topics import _reported_configs
from goaicore.records import GameEvent, new_event
from goaicore.records.avro.api import decode_event, encode_event

LIMIT = 64 * 1024


@pytest.fixture
def limited(settings: Settings) -> Settings:
    """The test's topics, created for a 64 KiB record limit."""
    small = settings.with_overrides(max_record_bytes=LIMIT)
    ensure_topics(small)
    return small


def _event_of_size(conversation: str, size: int) -> bytes:
    """An encoded event of exactly ``size`` bytes (its text padded to fit)."""
    event = new_event(conversation, GameEvent(kind="pad", text=""))
    overhead = len(encode_event(event))
    for pad in range(size - overhead, size - overhead - 8, -1):
        candidate = new_event(conversation, GameEvent(kind="pad", text="x" * pad))
        if len(encode_event(candidate)) == size:
            return encode_event(candidate)
    raise AssertionError(f"no event encodes to {size} bytes")


def _end_offsets(settings: Settings) -> dict[int, int]:
    consumer = make_consumer(settings)
    try:
        topic = settings.topic("events")
        parts = [TopicPartition(topic, p) for p in range(settings.partitions)]
        return {tp.partition: offset for tp, offset in consumer.end_offsets(parts).items()}
    finally:
        consumer.close()


def test_every_producer_and_topic_use_the_same_limit(limited: Settings) -> None:
    expected = LIMIT + RECORD_HEADROOM
    assert max_batch_bytes(limited) == expected
    producer = make_producer(limited)
    try:
        assert producer.config["max_request_size"] == expected
    finally:
        producer.close()

    from goaicore_store.app import create_app

    store = create_app(limited, data_dir=limited.data_dir / "app")
    assert store.app.conf.producer_max_request_size == expected


@pytest.mark.apache_kafka
def test_topics_are_created_accepting_exactly_that_limit(limited: Settings) -> None:
    admin = make_admin(limited)
    try:
        described = admin.describe_configs(
            [ConfigResource(ConfigResourceType.TOPIC, limited.topic(t.name)) for t in TOPICS]
        )
    finally:
        admin.close()
    reported = _reported_configs(described)
    assert {reported[limited.topic(t.name)]["max.message.bytes"] for t in TOPICS} == {
        str(LIMIT + RECORD_HEADROOM)
    }


def test_a_record_at_the_limit_is_written_and_one_over_it_is_refused_before_sending(
    limited: Settings,
) -> None:
    at_limit = _event_of_size("big", LIMIT)
    with EventPublisher(limited) as publisher:
        written = publisher.publish("big", decode_event(at_limit))
        before = _end_offsets(limited)
        over = decode_event(_event_of_size("big", LIMIT + 1))
        with pytest.raises(InvalidInputError, match=r"65,537 bytes encoded; the limit is 65,536"):
            publisher.publish("big", over)
    assert _end_offsets(limited) == before  # nothing was sent
    with HistoryReader(limited) as reader:
        assert [e.offset for e in reader.logged_events("big")] == [written.offset]


@pytest.mark.apache_kafka
def test_apache_kafka_itself_refuses_a_batch_over_the_topic_limit(limited: Settings) -> None:
    """The topic limit is real: a producer that skipped goaicore's checks is refused."""
    rogue = KafkaProducer(
        bootstrap_servers=limited.require_bootstrap(), max_request_size=4 * 1024 * 1024
    )
    try:
        future = rogue.send(limited.topic("events"), key=b"k", value=b"x" * (LIMIT * 2 + 1))
        with pytest.raises(MessageSizeTooLargeError):
            future.get(timeout=30)
    finally:
        rogue.close()


@pytest.mark.apache_kafka
def test_create_topics_says_when_a_topic_accepts_less_than_the_limit(limited: Settings) -> None:
    with pytest.raises(TopicMismatchError, match=r"max\.message\.bytes=131072, below the"):
        ensure_topics(limited.with_overrides(max_record_bytes=LIMIT * 2))
    env = {**settings_env(limited), "GOAICORE_MAX_RECORD_BYTES": str(LIMIT * 2)}
    done = subprocess.run(
        [sys.executable, "-m", "goaicore", "create-topics"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode != 0
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert "max.message.bytes=131072" in lines[0]
    assert "GOAICORE_MAX_RECORD_BYTES=131072" in lines[0]
