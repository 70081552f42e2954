"""Producers that are not goaicore's, at their defaults: librdkafka (confluent-kafka, the
client under Confluent's C#, Go, Node and C++ clients) on Apache Kafka.

librdkafka's default partitioner (``consistent_random``) hashes a key with CRC32, not
murmur2, so it puts many conversations' records in another partition than their owner's.
Such a record is forwarded to its key's partition and folded there, once, never where
it landed: one snapshot per conversation, and history, replay and verify agree. Its
default batches (up to 1,000,000 bytes) are accepted whole by the topics.
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import Producer
from kafka import KafkaConsumer, TopicPartition

from goaicore.clients import EventPublisher, HistoryReader
from goaicore.clients.snapshots import SnapshotReader
from goaicore.config import Settings
from goaicore.kafka.dead_letters import DeadLetter
from goaicore.kafka.limits import max_batch_bytes
from goaicore.kafka.partitioner import partition_for
from goaicore.records import GameEvent, ReplyStatus, UserMessage, new_chat_request, new_event
from goaicore.records.avro.api import decode_event, encode_chat_request, encode_event
from goaicore.replay.verify import verify_snapshot
from goaicore.replay.verify_shards import verify_against_log
from goaicore.sealing.keys import MasterKeys
from goaicore.store.kafka import KafkaConversationStore
from goaicore.store.sync_store import SyncConversationStore
from tests.brokers import SessionBroker
from tests.chat_agent.helpers import Replies, a_deployment, snapshot_when
from tests.cli import goaicore
from tests.kafka.helpers import wait_until
from tests.kafka_segments import stored_batches

pytestmark = [pytest.mark.integration, pytest.mark.apache_kafka]

PARTITIONS = 6
FORWARDED_FROM = "goaicore.forwarded-from"


@pytest.fixture(scope="module")
def clear(
    kafka_broker: SessionBroker, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Settings]:
    """A deployment whose workers do not seal: publishers write to ``events``."""
    folder = tmp_path_factory.mktemp("foreign-clear")
    settings = kafka_broker.settings(folder, "f").with_overrides(partitions=PARTITIONS)
    assert not settings.intake
    with a_deployment(settings):
        yield settings


@pytest.fixture(scope="module")
def sealed(
    kafka_broker: SessionBroker, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Settings]:
    """A deployment whose workers seal (master keys set): publishers write to ``intake``."""
    folder = tmp_path_factory.mktemp("foreign-sealed")
    masters = MasterKeys.generate("k1").to_text()
    settings = kafka_broker.settings(folder, "g", master_keys=masters).with_overrides(
        partitions=PARTITIONS
    )
    assert settings.intake
    with a_deployment(settings):
        yield settings


def misplaced_id(stem: str) -> str:
    """A conversation id librdkafka's default partitioner puts in another partition than
    its owner's (``ref-ü-1``, the one the probe found, is the first for ``ref-ü``)."""
    for n in range(1, 1000):
        candidate = f"{stem}-{n}"
        key = candidate.encode()
        if zlib.crc32(key) % PARTITIONS != partition_for(candidate, PARTITIONS):
            return candidate
    raise AssertionError("no such key")


def placed_id(stem: str) -> str:
    """A conversation id librdkafka's default partitioner puts in its owner's partition."""
    for n in range(1, 1000):
        candidate = f"{stem}-{n}"
        if zlib.crc32(candidate.encode()) % PARTITIONS == partition_for(candidate, PARTITIONS):
            return candidate
    raise AssertionError("no such key")


def librdkafka(settings: Settings, **config: Any) -> Producer:
    """A confluent-kafka producer at librdkafka's defaults (its partitioner included)."""
    return Producer({"bootstrap.servers": settings.require_bootstrap(), **config})


def produce(producer: Producer, topic: str, key: str, values: list[bytes]) -> list[Any]:
    """Send ``values`` under ``key`` and wait: each record's delivery report (error None)."""
    reports: list[Any] = []

    def delivered(err: Any, message: Any) -> None:
        reports.append((err, message.partition(), message.offset()))

    for value in values:
        producer.produce(topic, key=key.encode(), value=value, on_delivery=delivered)
    assert producer.flush(60) == 0
    assert len(reports) == len(values)
    return reports


def records_under(settings: Settings, name: str, key: str) -> list[Any]:
    """Every record of the topic under ``key``, from every partition."""
    topic = settings.topic(name)
    consumer = KafkaConsumer(bootstrap_servers=settings.require_bootstrap())
    try:
        parts = [TopicPartition(topic, p) for p in range(settings.partitions)]
        consumer.assign(parts)
        consumer.seek_to_beginning(*parts)
        ends = consumer.end_offsets(parts)
        out: list[Any] = []
        while any(consumer.position(tp) < ends[tp] for tp in parts):
            for batch in consumer.poll(timeout_ms=1000).values():
                out.extend(batch)
        return [r for r in out if r.key == key.encode()]
    finally:
        consumer.close()


def header(record: Any, name: str) -> str | None:
    return next((v.decode() for k, v in record.headers or () if k == name), None)


def only_in_owner_partition(settings: Settings, conversation: str) -> None:
    """One writer: every snapshot of the conversation is in its own partition."""
    snapshots = records_under(settings, "snapshots", conversation)
    assert snapshots
    assert {r.partition for r in snapshots} == {partition_for(conversation, PARTITIONS)}


def test_an_event_librdkafka_misplaced_is_forwarded_and_folded_once_by_its_owner(
    clear: Settings,
) -> None:
    conversation = misplaced_id("ref-ü")
    owner = partition_for(conversation, PARTITIONS)
    with EventPublisher(clear) as publisher:
        publisher.publish(conversation, new_event(conversation, UserMessage(text="before")))
    snapshot_when(clear, conversation, lambda s: s.event_count == 1)

    stray = new_event(conversation, GameEvent(kind="checkin", text="checked in at the theatre"))
    with_defaults = librdkafka(clear)
    [(err, landed, offset)] = produce(
        with_defaults, clear.topic("events"), conversation, [encode_event(stray)]
    )
    assert err is None
    assert landed != owner  # the premise: librdkafka's default put it elsewhere

    snapshot = snapshot_when(clear, conversation, lambda s: s.event_count == 2)
    assert [m.text for m in snapshot.messages] == ["before", "checked in at the theatre"]
    assert snapshot.last_position is not None
    assert snapshot.last_position.partition == owner
    only_in_owner_partition(clear, conversation)

    # The original stays where it landed; its forwarded copy is in the owner's partition.
    found_at = f"{clear.topic('events')}/{landed}/{offset}"
    events = records_under(clear, "events", conversation)
    copies = [r for r in events if decode_event(r.value).event_id == stray.event_id]
    assert sorted((r.partition, header(r, FORWARDED_FROM) or "") for r in copies) == sorted(
        [(landed, ""), (owner, found_at)]
    )
    [through_intake] = records_under(clear, "intake", conversation)
    assert (through_intake.partition, header(through_intake, FORWARDED_FROM)) == (owner, found_at)

    # Every reader agrees: the store's read (history), replay and verify.
    with SyncConversationStore(KafkaConversationStore(clear)) as store:
        read = store.read(conversation)
    assert read.snapshot == snapshot
    assert [logged.event.event_id for logged in read.events].count(stray.event_id) == 1
    assert {logged.partition for logged in read.events} == {owner}
    history = goaicore(clear, "history", conversation, "--json")
    assert history.returncode == 0, history.stderr
    listed = json.loads(history.stdout)["events"]
    assert [e["partition"] for e in listed] == [owner, owner]
    assert listed[1]["event"]["event_id"] == stray.event_id
    with HistoryReader(clear) as reader:
        assert verify_snapshot(reader, snapshot) == []
    result = verify_against_log(clear, [conversation])
    assert (result.report.checked, result.report.differences) == (1, [])
    verified = goaicore(clear, "verify", conversation, "--json")
    assert verified.returncode == 0, verified.stdout + verified.stderr

    # Sent again (a retry, same event id): forwarded again, and changes nothing.
    produce(with_defaults, clear.topic("events"), conversation, [encode_event(stray)])
    with EventPublisher(clear) as publisher:
        publisher.publish(conversation, new_event(conversation, UserMessage(text="after")))
    snapshot = snapshot_when(
        clear, conversation, lambda s: bool(s.messages) and s.messages[-1].text == "after"
    )
    assert snapshot.event_count == 3
    assert [m.text for m in snapshot.messages] == ["before", "checked in at the theatre", "after"]
    only_in_owner_partition(clear, conversation)
    everything = verify_against_log(clear)  # the whole log, the originals in it
    assert everything.report.checked >= 1
    assert everything.report.differences == []
    assert records_under(clear, "dead-letters", conversation) == []


def test_a_request_librdkafka_misplaced_is_answered_once_by_its_owner(clear: Settings) -> None:
    conversation = misplaced_id("ask-ü")
    owner = partition_for(conversation, PARTITIONS)
    ask = new_chat_request(conversation, "Where should I go tonight?")
    with Replies(clear) as replies:
        [(err, landed, offset)] = produce(
            librdkafka(clear), clear.topic("requests"), conversation, [encode_chat_request(ask)]
        )
        assert err is None
        assert landed != owner
        reply = replies.wait(ask.request_id)
        assert reply.status == ReplyStatus.OK, reply
        snapshot = snapshot_when(clear, conversation, lambda s: s.message_count == 2)
        assert len(replies.seen[ask.request_id]) == 1
    assert snapshot.messages[0].text == "Where should I go tonight?"
    only_in_owner_partition(clear, conversation)
    forwarded = [r for r in records_under(clear, "requests", conversation) if r.partition == owner]
    assert [header(r, FORWARDED_FROM) for r in forwarded] == [
        f"{clear.topic('requests')}/{landed}/{offset}"
    ]
    assert {r.partition for r in records_under(clear, "events", conversation)} == {owner}
    assert records_under(clear, "dead-letters", conversation) == []


def test_a_sealing_deployment_seals_what_librdkafka_misplaced_in_intake_or_events(
    sealed: Settings,
) -> None:
    conversation = misplaced_id("seal-ü")
    owner = partition_for(conversation, PARTITIONS)
    with EventPublisher(sealed) as publisher:
        publisher.publish(conversation, new_event(conversation, UserMessage(text="before")))
    snapshot_when(sealed, conversation, lambda s: s.event_count == 1)

    to_intake = new_event(conversation, GameEvent(kind="lore", text="via intake"))
    to_events = new_event(conversation, GameEvent(kind="lore", text="via events"))
    producer = librdkafka(sealed)
    [(err, landed, _)] = produce(
        producer, sealed.topic("intake"), conversation, [encode_event(to_intake)]
    )
    assert err is None
    assert landed != owner
    snapshot_when(sealed, conversation, lambda s: s.event_count == 2)
    [(err, landed, _)] = produce(
        producer, sealed.topic("events"), conversation, [encode_event(to_events)]
    )
    assert err is None
    assert landed != owner

    snapshot = snapshot_when(sealed, conversation, lambda s: s.event_count == 3)
    assert [m.text for m in snapshot.messages] == ["before", "via intake", "via events"]
    only_in_owner_partition(sealed, conversation)
    in_owner = [r for r in records_under(sealed, "events", conversation) if r.partition == owner]
    assert len(in_owner) == 3
    assert all(decode_event(r.value).sealed is not None for r in in_owner)  # sealed there

    with HistoryReader(sealed) as reader:
        texts = [getattr(e.body, "text", None) for e in reader.events(conversation)]
        assert texts == ["before", "via intake", "via events"]
        assert verify_snapshot(reader, snapshot) == []
    result = verify_against_log(sealed, [conversation])
    assert (result.report.checked, result.report.differences) == (1, [])
    assert result.report.unreadable == {}
    assert records_under(sealed, "dead-letters", conversation) == []


def test_librdkafkas_default_batches_are_accepted_whole_and_folded(
    clear: Settings, kafka_broker: SessionBroker
) -> None:
    """librdkafka batches up to 1,000,000 bytes: more than the record limit plus headroom
    (965,536 at the default limit) that the topics once accepted."""
    assert kafka_broker.apache is not None
    conversation = placed_id("bulk")
    owner = partition_for(conversation, PARTITIONS)
    values = [
        encode_event(new_event(conversation, GameEvent(kind="bulk", text=f"{n:02d}" * 55_000)))
        for n in range(18)
    ]
    reports = produce(
        librdkafka(clear, **{"linger.ms": 1000}), clear.topic("events"), conversation, values
    )
    assert [err for err, _, _ in reports] == [None] * len(values)  # none refused
    assert {partition for _, partition, _ in reports} == {owner}
    offsets = [offset for _, _, offset in reports]
    batches = [
        b
        for b in stored_batches(kafka_broker.apache, clear.topic("events"), owner)
        if b.base_offset <= offsets[-1] and b.last_offset >= offsets[0]
    ]
    assert len(batches) < len(values)  # batched, as a producer at its defaults does
    assert max(b.size for b in batches) > max_batch_bytes(clear)  # over the old topic limit

    snapshot = snapshot_when(clear, conversation, lambda s: s.event_count == 18, timeout=60)
    assert snapshot.messages[-1].text == "17" * 55_000

    # One over the record limit, where the worker would have to write it again (intake):
    # a dead letter with the reason, not a refusal by the broker.
    over = encode_event(new_event(conversation, GameEvent(kind="bulk", text="x" * 950_000)))
    [(err, _, _)] = produce(librdkafka(clear), clear.topic("intake"), conversation, [over])
    assert err is None
    wait_until(
        lambda: len(records_under(clear, "dead-letters", conversation)) == 1,
        timeout=30,
        what="a dead letter",
    )
    [letter] = [
        DeadLetter.from_record(r) for r in records_under(clear, "dead-letters", conversation)
    ]
    assert (letter.reason, letter.topic) == ("too-large", clear.topic("intake"))
    with SnapshotReader(clear) as snapshots:
        assert snapshots.get(conversation) == snapshot

    # One over the record limit to events itself: never folded, by any reader; one dead
    # letter (the store worker's), and the conversation goes on after it.
    produce(librdkafka(clear), clear.topic("events"), conversation, [over])
    with EventPublisher(clear) as publisher:
        publisher.publish(conversation, new_event(conversation, UserMessage(text="after")))
    after = snapshot_when(clear, conversation, lambda s: s.event_count == 19, timeout=60)
    assert after.messages[-1].text == "after"
    assert all(len(m.text) < 950_000 for m in after.messages)
    wait_until(
        lambda: len(records_under(clear, "dead-letters", conversation)) == 2,
        timeout=30,
        what="the events record's dead letter",
    )
    letters = [
        DeadLetter.from_record(r) for r in records_under(clear, "dead-letters", conversation)
    ]
    assert [(letter.reason, letter.topic) for letter in letters] == [
        ("too-large", clear.topic("intake")),
        ("too-large", clear.topic("events")),
    ]
    with SyncConversationStore(KafkaConversationStore(clear)) as store:
        read = store.read(conversation)
    assert len(read.events) == 19
    assert read.skipped == 1
    history = goaicore(clear, "history", conversation, "--json")
    assert history.returncode == 0, history.stderr
    assert len(json.loads(history.stdout)["events"]) == 19
    with HistoryReader(clear) as reader:
        assert verify_snapshot(reader, after) == []
    result = verify_against_log(clear, [conversation])
    assert (result.report.checked, result.report.differences) == (1, [])
