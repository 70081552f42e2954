"""One poll's records sorted into rows to write and records to set aside.

Pure apart from decoding: a record of ``events``, ``snapshots`` or ``replies``
that does not decode, or whose key is not its conversation id, becomes a
``Rejected`` and its position still advances, so bad input never stops the
projection: the projector sets aside a rejected record of ``snapshots`` or
``replies`` in the dead-letter topic, and only counts one of ``events`` (its dead
letter is the store worker's). A record of ``dead-letters`` is never
rejected: setting it aside would send it back to the topic it came from, a loop,
so whatever it holds is stored as it is. A record of ``events`` in another partition
than its key's is no row and no dead letter: the store worker forwards it to its
owner, and its copy there is the one projected (the fold's admission rule).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from goaicore.fold.admission import Unfoldable, admit_record
from goaicore.fold.records import LogRecord, Rejected
from goaicore.kafka.dead_letters import HEADER_PREFIX, DeadLetter
from goaicore.projection.rows import (
    DeadLetterRow,
    EventRow,
    ReplyRow,
    SnapshotRow,
    event_row,
    letter_row,
    reply_row,
    snapshot_row,
)
from goaicore.records import LogPosition
from goaicore.records.avro.api import decode_chat_reply, decode_snapshot, encode_event
from goaicore.records.avro.errors import DecodeError
from goaicore.settings import Settings

if TYPE_CHECKING:
    from goaicore.sealing.records import KeyLookup

TopicPartitionKey = tuple[str, int]
Position = tuple[int, int]  # (partition, offset) within one topic


@dataclass(frozen=True)
class ProjectedTopics:
    """The topics one projector reads, by their full names."""

    events: str
    snapshots: str
    replies: str
    dead_letters: str

    @classmethod
    def of(cls, settings: Settings) -> ProjectedTopics:
        return cls(
            settings.topic("events"),
            settings.topic("snapshots"),
            settings.topic("replies"),
            settings.topic("dead-letters"),
        )

    @property
    def names(self) -> tuple[str, ...]:
        return (self.events, self.snapshots, self.replies, self.dead_letters)


@dataclass
class Batch:
    """Rows of one transaction and the positions it moves to."""

    events: list[EventRow] = field(default_factory=list)
    # The latest snapshot per conversation in this batch; None: a tombstone (delete).
    snapshots: dict[str, SnapshotRow | None] = field(default_factory=dict)
    replies: list[ReplyRow] = field(default_factory=list)
    dead_letters: list[DeadLetterRow] = field(default_factory=list)
    rejected: list[Rejected] = field(default_factory=list)
    # The next offset to read per topic partition once this batch is written.
    positions: dict[TopicPartitionKey, int] = field(default_factory=dict)
    # The record behind each row (events and replies by position, snapshots by
    # conversation), to set it aside if PostgreSQL refuses the row.
    event_sources: dict[Position, Any] = field(default_factory=dict)
    snapshot_sources: dict[str, Any] = field(default_factory=dict)
    reply_sources: dict[Position, Any] = field(default_factory=dict)
    records: int = 0

    @property
    def rows(self) -> int:
        return len(self.events) + len(self.snapshots) + len(self.replies) + len(self.dead_letters)


def build_batch(
    polled: Mapping[Any, list[Any]],
    topics: ProjectedTopics,
    keys: KeyLookup | None = None,
    partitions: int | None = None,
) -> Batch:
    """Sort one poll's records, by partition as Kafka consumers return them, into a Batch;
    ``partitions``: how many ``events`` has (a record whose key belongs to another of
    them is skipped, as every reader of the log skips it). A record over the record
    limit is stored as the log holds it: the fold of its rows (verify, the console)
    applies the bounds of the stretch it is in, which decide whether it is folded."""
    batch = Batch()
    for tp, records in polled.items():
        if not records:
            continue
        for record in records:
            batch.records += 1
            if tp.topic == topics.events:
                _add_event(batch, record, keys, partitions)
            elif tp.topic == topics.snapshots:
                _add_snapshot(batch, record)
            elif tp.topic == topics.replies:
                _add_reply(batch, record)
            elif tp.topic == topics.dead_letters:
                _add_dead_letter(batch, record)
            else:
                raise ValueError(f"record from an unexpected topic {tp.topic}")
        batch.positions[(tp.topic, tp.partition)] = records[-1].offset + 1
    return batch


def _add_event(batch: Batch, record: Any, keys: KeyLookup | None, partitions: int | None) -> None:
    # The worker's rule: both alike.
    admitted = admit_record(record.key, record.value, keys, record.partition, partitions)
    if isinstance(admitted, Unfoldable):
        if admitted.owner is None:  # another partition's: the worker forwards it there
            batch.rejected.append(set_aside(record, admitted.reason, admitted.detail))
        return
    event = admitted.event
    # A sealed event is stored opened, like its body beside it: the console and verify
    # fold the rows without keys, and an erasure rewrites them as their skeleton.
    stored = encode_event(event) if admitted.opened else record.value
    batch.events.append(event_row(record.partition, record.offset, event, stored))
    batch.event_sources[(record.partition, record.offset)] = record


def _add_snapshot(batch: Batch, record: Any) -> None:
    try:
        key = record.key.decode() if record.key is not None else None
    except UnicodeDecodeError:
        batch.rejected.append(set_aside(record, "bad-key", "the record key is not UTF-8"))
        return
    if record.value is None:
        if key is None:
            batch.rejected.append(set_aside(record, "bad-key", "a tombstone without a key"))
        else:
            batch.snapshots[key] = None
        return
    try:
        snapshot = decode_snapshot(record.value)
    except DecodeError as err:
        batch.rejected.append(set_aside(record, err.reason, err.message))
        return
    if key != snapshot.conversation_id:
        batch.rejected.append(_key_mismatch(record, snapshot.conversation_id))
        return
    batch.snapshots[key] = snapshot_row(record.partition, record.offset, snapshot, record.value)
    batch.snapshot_sources[key] = record


def _add_reply(batch: Batch, record: Any) -> None:
    try:
        reply = decode_chat_reply(record.value)
    except DecodeError as err:
        batch.rejected.append(set_aside(record, err.reason, err.message))
        return
    if record.key is None or record.key != reply.conversation_id.encode():
        batch.rejected.append(_key_mismatch(record, reply.conversation_id))
        return
    batch.replies.append(reply_row(record.partition, record.offset, record.timestamp, reply))
    batch.reply_sources[(record.partition, record.offset)] = record


def _add_dead_letter(batch: Batch, record: Any) -> None:
    letter = read_dead_letter(record)
    batch.dead_letters.append(letter_row(record.partition, record.offset, record.timestamp, letter))


@dataclass(frozen=True)
class _Headed:
    """A record's key and value with the headers ``DeadLetter.from_record`` can read."""

    key: bytes | None
    value: bytes | None
    headers: list[tuple[str, bytes]]


_NUMBERS = (HEADER_PREFIX + "partition", HEADER_PREFIX + "offset")


def read_dead_letter(record: Any) -> DeadLetter:
    """``DeadLetter.from_record``, also for a record written by someone else: a header
    without a value, or an origin partition or offset that is not a number, is left
    out (the origin is then unknown: -1) rather than failing the record."""
    headers = [
        (name, value)
        for name, value in (record.headers or [])
        if isinstance(value, bytes) and (name not in _NUMBERS or _is_int(value))
    ]
    return DeadLetter.from_record(_Headed(record.key, record.value, headers))


def _is_int(value: bytes) -> bool:
    try:
        int(value.decode(errors="replace"))
    except ValueError:
        return False
    return True


def set_aside(record: Any, reason: str, detail: str) -> Rejected:
    """A consumed record set aside, with the reason its dead letter carries."""
    position = LogPosition(partition=record.partition, offset=record.offset)
    return Rejected(LogRecord(record.key, record.value, position, origin=record), reason, detail)


def _key_mismatch(record: Any, conversation_id: str) -> Rejected:
    return set_aside(
        record,
        "key-mismatch",
        f"record key {record.key!r} is not the conversation id {conversation_id!r}",
    )
