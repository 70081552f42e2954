"""The threaded aiokafka consumer the projector reads with, against a real broker: blocking
calls from any thread, seeks that drop what was fetched ahead, commits that report
their failure, and nothing left running after close."""

from __future__ import annotations

import threading

import pytest
from kafka import TopicPartition

from goaicore.clients import EventPublisher
from goaicore.config import Settings
from goaicore.errors import BrokerError
from goaicore.kafka.connection import make_consumer
from goaicore.kafka.threaded_consumer import ThreadedConsumer
from goaicore.records import UserMessage

COUNT = 60


def _publish(settings: Settings) -> None:
    with EventPublisher(settings, source="threaded-test") as publisher:
        publisher.publish_many((f"conv-{n % 3}", UserMessage(text=f"m{n}")) for n in range(COUNT))


def _read_all(consumer: ThreadedConsumer, partitions: list[object]) -> dict[object, list[int]]:
    offsets: dict[object, list[int]] = {tp: [] for tp in partitions}
    while True:
        progress = consumer.read_to(partitions)
        if all(hw is not None and at >= hw for at, hw in progress.values()):
            return offsets
        for tp, records in consumer.poll(200, 7).items():
            assert len(records) <= 7
            offsets[tp].extend(r.offset for r in records)


def test_reads_seeks_and_commits_from_the_calling_thread(topics: Settings) -> None:
    _publish(topics)
    group = f"{topics.topic_prefix}.threaded"
    consumer = ThreadedConsumer(topics, "goaicore-test", group_id=group)
    try:
        partitions = consumer.partitions(topics.topic("events"))
        ends = consumer.end_offsets(partitions)
        assert sum(ends.values()) == COUNT
        consumer.assign_at({tp: 0 for tp in partitions})
        read = _read_all(consumer, partitions)
        assert {tp: len(offsets) for tp, offsets in read.items()} == ends
        assert all(offsets == list(range(len(offsets))) for offsets in read.values())

        # A seek back drops what was fetched ahead: the next records start at the seek.
        busiest = max(partitions, key=lambda tp: ends[tp])
        consumer.seek({busiest: 2})
        again: list[int] = []
        while len(again) < ends[busiest] - 2:
            again.extend(r.offset for r in consumer.poll(500, 100).get(busiest, []))
        assert again == list(range(2, ends[busiest]))

        failures: list[BaseException] = []
        done = threading.Event()
        consumer.commit_soon({busiest: 5}, failures.append)
        checker = make_consumer(topics, group_id=group)
        try:
            for _ in range(50):
                if checker.committed(TopicPartition(*busiest)) == 5:
                    done.set()
                    break
                done.wait(0.1)
        finally:
            checker.close()
        assert done.is_set()
        assert failures == []
    finally:
        consumer.close()
    assert not [t for t in threading.enumerate() if t.name == "goaicore-test-kafka"]


def test_a_failed_commit_is_reported_to_its_callback(topics: Settings) -> None:
    consumer = ThreadedConsumer(topics, "goaicore-test")  # no group: a commit cannot succeed
    try:
        partitions = consumer.partitions(topics.topic("events"))
        consumer.assign_at({tp: 0 for tp in partitions})
        failed = threading.Event()
        errors: list[BaseException] = []

        def on_error(err: BaseException) -> None:
            errors.append(err)
            failed.set()

        consumer.commit_soon({partitions[0]: 1}, on_error)
        assert failed.wait(10), "the commit's failure never reached its callback"
        assert errors
        assert "group" in str(errors[0]).lower()
    finally:
        consumer.close()


def test_a_missing_topic_is_one_clear_error_and_the_thread_still_closes(
    topics: Settings,
) -> None:
    consumer = ThreadedConsumer(topics, "goaicore-test")
    try:
        with pytest.raises(BrokerError, match="does not exist"):
            consumer.partitions(topics.topic("no-such-topic"))
    finally:
        consumer.close()
    assert not [t for t in threading.enumerate() if t.name == "goaicore-test-kafka"]
