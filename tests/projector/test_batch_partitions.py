"""The projector applies the fold's admission rule: a record of ``events`` in another
partition than its key's is no row and no dead letter (the store worker forwards it, and
its copy in its own partition is the one projected)."""

from __future__ import annotations

from dataclasses import dataclass

from goaicore.kafka.partitioner import partition_for
from goaicore.projection.batch import ProjectedTopics, build_batch
from goaicore.records import UserMessage, new_event
from goaicore.records.avro.api import encode_event

TOPICS = ProjectedTopics("t.events", "t.snapshots", "t.replies", "t.dead-letters")


@dataclass(frozen=True)
class Place:
    topic: str
    partition: int


@dataclass(frozen=True)
class Consumed:
    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    timestamp: int = 0
    headers: tuple[tuple[str, bytes], ...] = ()


def test_a_record_in_another_partition_than_its_keys_is_left_to_its_owner() -> None:
    owner = partition_for("c", 6)
    elsewhere = (owner + 1) % 6
    value = encode_event(new_event("c", UserMessage(text="hello")))
    home = Consumed("t.events", owner, 3, b"c", value)
    stray = Consumed("t.events", elsewhere, 9, b"c", value)
    junk = Consumed("t.events", elsewhere, 10, b"c", b"\x00 not avro")
    polled = {Place("t.events", owner): [home], Place("t.events", elsewhere): [stray, junk]}

    batch = build_batch(polled, TOPICS, partitions=6)
    assert [(row.topic_partition, row.log_offset) for row in batch.events] == [(owner, 3)]
    assert batch.rejected == []  # not a dead letter either: the worker forwards it
    assert batch.positions == {("t.events", owner): 4, ("t.events", elsewhere): 11}

    # Without the partition count, as before: every decodable record is a row.
    unchecked = build_batch(polled, TOPICS)
    assert len(unchecked.events) == 2
    assert [r.reason for r in unchecked.rejected] == ["bad-magic"]
