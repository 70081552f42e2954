"""One record limit: GOAICORE_MAX_RECORD_BYTES and the producers' max request size agree,
a record over it is refused before it is sent, and the topics accept batches of both
goaicore's producers and any Kafka client left at its defaults (1 MiB)."""

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
from goaicore.kafka.limits import (
    CLIENT_DEFAULT_BATCH_BYTES,
    RECORD_HEADROOM,
    max_batch_bytes,
    topic_max_message_bytes,
)
from goaicore.kafka.topics import _reported_configs, topic_configs
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


def test_topics_accept_the_record_limit_or_a_default_clients_batch_whichever_is_larger(
    settings: Settings,
) -> None:
    """librdkafka batches up to 1,000,000 bytes and Java sends up to 1,048,576 by default:
    a topic at the record limit's 965,536 would refuse such batches whole."""
    assert CLIENT_DEFAULT_BATCH_BYTES == 1_048_576
    default = settings.with_overrides(max_record_bytes=900_000)
    assert max_batch_bytes(default) == 900_000 + RECORD_HEADROOM
    assert topic_max_message_bytes(default) == 1_048_576 + RECORD_HEADROOM
    large = settings.with_overrides(max_record_bytes=4_000_000)
    assert topic_max_message_bytes(large) == 4_000_000 + RECORD_HEADROOM == max_batch_bytes(large)
    for spec in TOPICS:
        assert topic_configs(spec, default)["max.message.bytes"] == str(1_048_576 + 65_536)


@pytest.mark.apache_kafka
def test_topics_are_created_accepting_a_default_clients_batch(limited: Settings) -> None:
    admin = make_admin(limited)
    try:
        described = admin.describe_configs(
            [ConfigResource(ConfigResourceType.TOPIC, limited.topic(t.name)) for t in TOPICS]
        )
    finally:
        admin.close()
    reported = _reported_configs(described)
    assert {reported[limited.topic(t.name)]["max.message.bytes"] for t in TOPICS} == {
        str(CLIENT_DEFAULT_BATCH_BYTES + RECORD_HEADROOM)
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
        over = topic_max_message_bytes(limited) + 1
        future = rogue.send(limited.topic("events"), key=b"k", value=b"x" * over)
        with pytest.raises(MessageSizeTooLargeError):
            future.get(timeout=30)
    finally:
        rogue.close()


@pytest.mark.apache_kafka
def test_create_topics_says_when_a_topic_accepts_less_than_the_limit(limited: Settings) -> None:
    larger = 2 * CLIENT_DEFAULT_BATCH_BYTES  # its batches are over what the topics accept
    with pytest.raises(TopicMismatchError, match=r"max\.message\.bytes=1114112, below the"):
        ensure_topics(limited.with_overrides(max_record_bytes=larger))
    env = {**settings_env(limited), "GOAICORE_MAX_RECORD_BYTES": str(larger)}
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
    assert "max.message.bytes=1114112" in lines[0]
    assert f"GOAICORE_MAX_RECORD_BYTES={larger}" in lines[0]


@pytest.mark.apache_kafka
def test_create_topics_warns_of_a_topic_that_refuses_a_default_clients_batch(
    settings: Settings, caplog: pytest.LogCaptureFixture
) -> None:
    """A topic created before the topics accepted 1 MiB batches (at the record limit plus
    headroom) still takes every record goaicore writes: a warning, not an error."""
    from kafka.admin import NewTopic

    small = settings.with_overrides(max_record_bytes=LIMIT)
    old = str(max_batch_bytes(small))
    admin = make_admin(small)
    try:
        configs = {"cleanup.policy": "delete", "retention.ms": "-1", "max.message.bytes": old}
        events = NewTopic(small.topic("events"), small.partitions, 1, topic_configs=configs)
        admin.create_topics([events])
    finally:
        admin.close()
    with caplog.at_level("WARNING", logger="goaicore.kafka.topics"):
        ensure_topics(small)
    [warning] = [r.getMessage() for r in caplog.records if r.name == "goaicore.kafka.topics"]
    assert f"topic {small.topic('events')} has max.message.bytes={old}" in warning
    assert f"max.message.bytes={topic_max_message_bytes(small)}" in warning
