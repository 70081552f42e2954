"""One poll's records sorted into rows to write and records to set aside.

Pure apart from decoding: a record that does not decode, or whose key is not
its conversation id, becomes a ``Rejected`` (for the dead-letter topic) and its
position still advances, so bad input never stops the projection.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from goaicore.fold.admission import Unfoldable, admit
from goaicore.fold.records import LogRecord, Rejected
from goaicore.projection.rows import EventRow, SnapshotRow, event_row, snapshot_row
from goaicore.records import LogPosition
from goaicore.records.avro.api import decode_snapshot
from goaicore.records.avro.errors import DecodeError

TopicPartitionKey = tuple[str, int]


@dataclass
class Batch:
    """Rows of one transaction and the positions it moves to."""

    events: list[EventRow] = field(default_factory=list)
    # The latest snapshot per conversation in this batch; None: a tombstone (delete).
    snapshots: dict[str, SnapshotRow | None] = field(default_factory=dict)
    rejected: list[Rejected] = field(default_factory=list)
    # The next offset to read per topic partition once this batch is written.
    positions: dict[TopicPartitionKey, int] = field(default_factory=dict)
    # The record behind each row (events by position, snapshots by conversation),
    # to set it aside if PostgreSQL refuses the row.
    event_sources: dict[tuple[int, int], Any] = field(default_factory=dict)
    snapshot_sources: dict[str, Any] = field(default_factory=dict)
    records: int = 0


def build_batch(polled: Mapping[Any, list[Any]], events_topic: str, snapshots_topic: str) -> Batch:
    """Sort records (kafka-python's poll result) into a Batch."""
    batch = Batch()
    for tp, records in polled.items():
        if not records:
            continue
        for record in records:
            batch.records += 1
            if tp.topic == events_topic:
                _add_event(batch, record)
            elif tp.topic == snapshots_topic:
                _add_snapshot(batch, record)
            else:
                raise ValueError(f"record from an unexpected topic {tp.topic}")
        batch.positions[(tp.topic, tp.partition)] = records[-1].offset + 1
    return batch


def _add_event(batch: Batch, record: Any) -> None:
    event = admit(record.key, record.value)  # the store worker's rule, so both fold alike
    if isinstance(event, Unfoldable):
        batch.rejected.append(set_aside(record, event.reason, event.detail))
        return
    batch.events.append(event_row(record.partition, record.offset, event, record.value))
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


def set_aside(record: Any, reason: str, detail: str) -> Rejected:
    """A kafka-python record set aside, with the reason its dead letter carries."""
    position = LogPosition(partition=record.partition, offset=record.offset)
    return Rejected(LogRecord(record.key, record.value, position, origin=record), reason, detail)


def _key_mismatch(record: Any, conversation_id: str) -> Rejected:
    return set_aside(
        record,
        "key-mismatch",
        f"record key {record.key!r} is not the conversation id {conversation_id!r}",
    )
