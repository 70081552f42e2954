"""The one loop over records of ``events``: admission, the fold, and what each record became."""

from __future__ import annotations

import dataclasses
import zlib
from datetime import UTC, datetime

from hypothesis import given, settings
from hypothesis import strategies as st

from goaicore.fold import DEFAULT_POLICY
from goaicore.fold.admission import ANOTHER_PARTITION, TOO_LARGE, Unfoldable, another_partition
from goaicore.fold.policy import PolicyTimeline, policy_for_record_limit
from goaicore.fold.records import Applied, LogRecord, Rejected, admitted, fold_records
from goaicore.kafka.partitioner import partition_for
from goaicore.records import ConversationEvent, ConversationSnapshot, LogPosition, UserMessage
from goaicore.records.avro.api import encode_event
from tests.fold.conversations import conversation_log, fold_all

Log = list[tuple[ConversationEvent, LogPosition]]


def _records(log: Log) -> list[LogRecord]:
    return [
        LogRecord(event.conversation_id.encode(), encode_event(event), position)
        for event, position in log
    ]


def _last_snapshot(outcomes: list[Applied | Rejected]) -> ConversationSnapshot | None:
    applied = [o for o in outcomes if isinstance(o, Applied)]
    return applied[-1].snapshot if applied else None


@settings(max_examples=60, deadline=None)
@given(conversation_log())
def test_the_loop_folds_a_log_exactly_as_the_fold_does(log: Log) -> None:
    outcomes = list(fold_records(_records(log), DEFAULT_POLICY))
    assert all(isinstance(o, Applied) for o in outcomes)
    assert _last_snapshot(outcomes) == fold_all(log)


@settings(max_examples=40, deadline=None)
@given(conversation_log(), st.data())
def test_records_of_another_key_or_unreadable_bytes_cost_only_themselves(
    log: Log, data: st.DataObject
) -> None:
    records = _records(log)
    indexes = st.integers(0, len(records) - 1)
    spoiled = sorted(data.draw(st.sets(indexes, max_size=3))) if records else []
    mixed = list(records)
    for n in spoiled:
        original = records[n]
        # The wire value of another conversation under this key, or bytes that decode to nothing.
        if n % 2:
            mixed[n] = LogRecord(b"someone-else", original.value, original.position)
        else:
            mixed[n] = LogRecord(original.key, b"\x00 not avro", original.position)
    outcomes = list(fold_records(mixed, DEFAULT_POLICY))
    rejected = [o for o in outcomes if isinstance(o, Rejected)]
    assert [r.record.position for r in rejected] == [mixed[n].position for n in spoiled]
    assert {r.reason for r in rejected} <= {"key-mismatch", "bad-magic"}
    kept = [pair for n, pair in enumerate(log) if n not in spoiled]
    assert _last_snapshot(outcomes) == fold_all(kept)


@settings(max_examples=30, deadline=None)
@given(conversation_log())
def test_a_redelivered_log_changes_nothing(log: Log) -> None:
    once = fold_all(log)
    outcomes = list(fold_records(_records(log), DEFAULT_POLICY, current=lambda key: once))
    assert all(isinstance(o, Applied) and not o.changed for o in outcomes)


def test_keep_leaves_events_out_and_current_is_the_starting_point() -> None:
    log = _log_of(3)
    records = _records(log)
    first = fold_all(log[:1])
    outcomes = list(
        fold_records(
            records[1:],
            DEFAULT_POLICY,
            current=lambda key: first,
            keep=lambda event: event.event_id != "c-2",
        )
    )
    assert [o.event.event_id for o in outcomes if isinstance(o, Applied)] == ["c-1"]
    assert _last_snapshot(outcomes) == fold_all(log[:2])


def _log_of(count: int) -> Log:
    return [
        (
            ConversationEvent(
                event_id=f"c-{n}",
                conversation_id="c",
                occurred_at=datetime(2026, 1, 1, tzinfo=UTC),
                source="test",
                body=UserMessage(text=f"message {n}"),
            ),
            LogPosition(partition=0, offset=n),
        )
        for n in range(count)
    ]


def test_a_record_in_another_partition_than_its_keys_is_its_owners_not_folded_here() -> None:
    """A producer without murmur2 (librdkafka's default) put one of c's events in the
    wrong partition: no reader folds it there (its owner gets it forwarded)."""
    partitions = 6
    owner = partition_for("c", partitions)
    elsewhere = (owner + 1) % partitions
    log = [
        (event, LogPosition(partition=owner, offset=position.offset))
        for event, position in _log_of(3)
    ]
    records = [
        LogRecord(record.key, record.value, record.position, partitions=partitions)
        for record in _records(log)
    ]
    stray_event = dataclasses.replace(log[1][0], event_id="stray")
    stray = LogRecord(
        b"c", encode_event(stray_event), LogPosition(partition=elsewhere, offset=7), None, 6
    )
    junk = LogRecord(b"c", b"\x00 not avro", LogPosition(partition=elsewhere, offset=8), None, 6)
    outcomes = list(fold_records([records[0], stray, junk, *records[1:]], DEFAULT_POLICY))
    rejected = [o for o in outcomes if isinstance(o, Rejected)]
    # Whatever it holds: its key's partition decides, before anything is decoded.
    assert [(r.record, r.reason, r.owner) for r in rejected] == [
        (stray, ANOTHER_PARTITION, owner),
        (junk, ANOTHER_PARTITION, owner),
    ]
    assert f"in partition {elsewhere}, but its key's partition is {owner}" in rejected[0].detail
    assert _last_snapshot(outcomes) == fold_all(log)
    assert [o.event.event_id for o in outcomes if isinstance(o, Applied)] == ["c-0", "c-1", "c-2"]

    logged = admitted(stray)
    assert isinstance(logged, Unfoldable)
    assert logged.owner == owner
    # A record not read from Kafka (no partition count: a projection's row) is not checked.
    unplaced = LogRecord(stray.key, stray.value, stray.position)
    assert [type(o) for o in fold_records([unplaced], DEFAULT_POLICY)] == [Applied]
    # A record without a key has no partition of its own: it is another key's dead letter.
    keyless = LogRecord(None, stray.value, stray.position, None, 6)
    [lost] = fold_records([keyless], DEFAULT_POLICY)
    assert isinstance(lost, Rejected)
    assert (lost.reason, lost.owner) == ("key-mismatch", None)


def test_the_partition_rule_is_murmur2_of_the_key() -> None:
    """``ref-ü-1``, the key librdkafka's default partitioner misplaced: its owner among 6
    partitions is murmur2's 4 (CRC32's, consistent_random, gives 1)."""
    key = "ref-ü-1".encode()
    assert another_partition(key, 4, 6) is None
    assert another_partition(key, 1, 6) == 4
    assert zlib.crc32(key) % 6 == 1
    assert another_partition(None, 1, 6) is None


def test_a_record_over_the_record_limit_is_set_aside_from_fold_version_4_on() -> None:
    """A producer that is not goaicore's wrote an event over the record limit: from fold
    version 4 no reader folds it (the store worker dead-letters it as too-large); a
    stretch folded under version 3 folded it, and its replay still does."""
    policy = policy_for_record_limit(65_536)
    limit = policy.record_limit
    assert limit == 65_536
    log = _log_of(3)
    big_event = dataclasses.replace(log[1][0], event_id="big", body=UserMessage(text="x" * 70_000))
    big = LogRecord(b"c", encode_event(big_event), LogPosition(partition=0, offset=10))
    assert len(big.value or b"") > limit
    later = [(e, LogPosition(partition=0, offset=20 + n)) for n, (e, _) in enumerate(log[2:])]
    records = [*_records(log[:2]), big, *_records(later)]

    outcomes = list(fold_records(records, policy))
    rejected = [o for o in outcomes if isinstance(o, Rejected)]
    assert [(r.record, r.reason) for r in rejected] == [(big, TOO_LARGE)]
    assert f"at most {limit:,} (GOAICORE_MAX_RECORD_BYTES)" in rejected[0].detail
    assert _last_snapshot(outcomes) == fold_all([*log[:2], *later], policy=policy)
    refused = admitted(big, record_limit=limit)
    assert isinstance(refused, Unfoldable)
    assert refused.reason == TOO_LARGE
    assert not isinstance(admitted(big), Unfoldable)  # no limit given: any size

    # One at the limit is folded.
    fitting = big_event
    while (size := len(encode_event(fitting))) != limit:  # the text's length prefix varies
        text = "x" * (len(fitting.body.text) + limit - size)  # type: ignore[union-attr]
        fitting = dataclasses.replace(fitting, body=UserMessage(text=text))
    at_limit = LogRecord(b"c", encode_event(fitting), LogPosition(partition=0, offset=10))
    assert len(at_limit.value or b"") == limit
    assert [type(o) for o in fold_records([at_limit], policy)] == [Applied]

    # Under version 3 (a stretch folded before version 4) it is folded: a replay of that
    # stretch under its own bounds reproduces the snapshot written then.
    version_3 = dataclasses.replace(policy, version=3)
    assert version_3.record_limit is None
    old = list(fold_records(records, version_3))
    assert not [o for o in old if isinstance(o, Rejected)]
    timeline = PolicyTimeline(policy, ((LogPosition(partition=0, offset=15), version_3),))
    replayed = list(fold_records(records, timeline))
    assert not [o for o in replayed if isinstance(o, Rejected)]
    assert "big" in {o.event.event_id for o in replayed if isinstance(o, Applied)}
