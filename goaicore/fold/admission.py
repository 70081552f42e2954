"""Which records of ``events`` the fold takes in: one rule for every reader of the log.

The store worker, the projector and the history reader (replay, verify) must
agree on it, or a replay folds a record the worker set aside and the two
snapshots differ. A record is folded when it sits in its key's partition, is no
larger than the record limit (from fold version 4: the policy's ``record_limit``),
decodes, its key is its event's conversation id, and that id fits in a snapshot.

A record in another partition than its key's (murmur2 of the key, Kafka's Java
default: see :mod:`goaicore.kafka.partitioner`) is another partition's record: a
producer with another partitioner put it there (librdkafka's default is CRC32-based).
Folding it where it landed would make a second writer of its conversation, so no
reader takes it; the store worker forwards it to its owner (through ``intake``),
which appends it to ``events`` where it belongs. Anything else not folded is a dead
letter.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING, NamedTuple

from goaicore.kafka.partitioner import partition_for_key
from goaicore.records import ConversationEvent
from goaicore.records.avro.api import decode_event
from goaicore.records.avro.errors import DecodeError
from goaicore.records.validation import conversation_id_problem

if TYPE_CHECKING:
    from goaicore.sealing.records import KeyLookup

MAX_CONVERSATION_ID_BYTES = 4096
"""Longest conversation id folded: its snapshot must fit a record beside the history."""


INVALID_CONVERSATION_ID = "invalid-conversation-id"
"""The reason a record whose conversation id no caller could give is not folded: a
control character (NUL among them) or line separator in it (see
:func:`goaicore.records.validation.conversation_id_problem`)."""

TOO_LARGE = "too-large"
"""The reason a record over the record limit is not folded: goaicore's own writers never
write one, a producer that is not goaicore's may."""

ANOTHER_PARTITION = "another-partition"
"""The reason a record in another partition than its key's is not folded where it is."""


@dataclass(frozen=True)
class Unfoldable:
    """Why a record of ``events`` is not folded: a dead letter's reason and detail."""

    reason: str
    detail: str
    owner: int | None = None
    """For another partition's record: the partition its key belongs to (where the
    store worker forwards it instead of setting it aside)."""


class Admitted(NamedTuple):
    """An event admitted, and whether it was sealed and is here opened (in the clear).

    A named tuple: one is made per event read, and a frozen dataclass cost a third of a
    microsecond more to build."""

    event: ConversationEvent
    opened: bool = False


def admit(
    key: bytes | None,
    value: bytes | None,
    keys: KeyLookup | None = None,
    partition: int | None = None,
    partitions: int | None = None,
    record_limit: int | None = None,
) -> ConversationEvent | Unfoldable:
    """The event a record of ``events`` holds, or why the fold does not take it.

    A record read from ``partition`` of a topic of ``partitions`` partitions is taken
    only when its key belongs there (:func:`another_partition`); without them (a
    record not read from Kafka) its place is not checked. A value of more than
    ``record_limit`` bytes is not taken (None: any size).

    A sealed event is opened with ``keys``; once its key is gone (or with no keys at
    all) it is folded as its skeleton, content marked erased (what the conversation's
    erasure folds to anyway), and keeps its seal: ``event.sealed`` set means unread.
    """
    admitted = admit_record(key, value, keys, partition, partitions, record_limit)
    return admitted if isinstance(admitted, Unfoldable) else admitted.event


def admit_record(
    key: bytes | None,
    value: bytes | None,
    keys: KeyLookup | None = None,
    partition: int | None = None,
    partitions: int | None = None,
    record_limit: int | None = None,
) -> Admitted | Unfoldable:
    """:func:`admit`, also saying whether the event was opened from a seal."""
    if partition is not None and partitions is not None:
        owner = another_partition(key, partition, partitions)
        if owner is not None:
            return Unfoldable(
                ANOTHER_PARTITION,
                f"in partition {partition}, but its key's partition is {owner} (murmur2 of "
                f"the key over {partitions} partitions, Kafka's default partitioner)",
                owner,
            )
    if record_limit is not None and value is not None and len(value) > record_limit:
        return Unfoldable(
            TOO_LARGE,
            f"the event is {len(value):,} bytes; at most {record_limit:,} "
            "(GOAICORE_MAX_RECORD_BYTES): not folded",
        )
    try:
        event = decode_event(value)
    except DecodeError as err:
        return Unfoldable(err.reason, err.message)
    opened = False
    if event.sealed is not None:
        inner = _opened(event, keys)
        if isinstance(inner, Unfoldable):
            return inner
        event, opened = inner, inner.sealed is None
    if key is None or key != event.conversation_id.encode():
        shown = key if key is None or len(key) <= 200 else key[:200] + b"..."
        return Unfoldable(
            "key-mismatch",
            f"record key {shown!r} is not the event's conversation id "
            f"{event.conversation_id[:200]!r}",
        )
    if len(key) > MAX_CONVERSATION_ID_BYTES:
        return Unfoldable(
            "conversation-id-too-long",
            f"a conversation id of {len(key)} bytes (at most {MAX_CONVERSATION_ID_BYTES}): "
            "its snapshot could not be written",
        )
    problem = conversation_id_problem(event.conversation_id)
    if problem is not None:
        return Unfoldable(INVALID_CONVERSATION_ID, problem)
    return Admitted(event, opened)


def another_partition(key: bytes | None, partition: int, partitions: int) -> int | None:
    """The partition a record with ``key`` read from ``partition`` (of ``partitions``)
    belongs to when it is another one; None when it is this one, or the record has no
    key (a keyless record is then a dead letter, like any other under the wrong key).

    Checked before anything else: whatever the record holds, its key's partition decides
    (its owner sets it aside if it is no event of that conversation).
    """
    if key is None or partitions < 1:
        return None
    owner = partition_for_key(bytes(key), partitions)
    return None if owner == partition else owner


def _opened(event: ConversationEvent, keys: KeyLookup | None) -> ConversationEvent | Unfoldable:
    if keys is None:  # no master keys here: nothing sealed can be opened
        from goaicore.sealing.content import erased

        return erased(event)
    from goaicore.sealing.cipher import SealBroken
    from goaicore.sealing.records import open_event

    try:
        opened = open_event(event, keys)
        if not opened.readable:
            return dataclasses.replace(opened.record, sealed=event.sealed)
        return opened.record
    except SealBroken as err:
        return Unfoldable("seal-broken", str(err))
    except DecodeError as err:
        return Unfoldable(err.reason, f"inside the seal: {err.message}")
