"""Kafka records to table rows: pure functions, no I/O.

Bodies and snapshots become JSON for the ``jsonb`` columns. PostgreSQL text
and jsonb cannot hold the NUL character, so it is written as U+FFFD there;
the ``avro`` column keeps every record byte for byte, so nothing is lost.
"""

from __future__ import annotations

import dataclasses
import json
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, NamedTuple

from goaicore.records import (
    EVENT_TYPES,
    ChatReply,
    CompactionApplied,
    ConversationEvent,
    ConversationSnapshot,
    EventBody,
    TurnFailed,
)
from goaicore.records.event_types import searchable_text
from goaicore.records.json_text import json_text
from goaicore.records.jsonable import jsonable

if TYPE_CHECKING:
    from goaicore.kafka.dead_letters import DeadLetter

# Body types that add a message to the history (counted in conversations.message_count).
MESSAGE_TYPES = frozenset(entry.name for entry in EVENT_TYPES if entry.adds_message)
FAILED_TURN = TurnFailed.__name__  # counted in conversations.failed_turns
COMPACTION = CompactionApplied.__name__  # counted in conversations.compactions

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_INT32 = 2**31
_INT64 = 2**63


def clean(text: str) -> str:
    """Text PostgreSQL accepts: NUL becomes U+FFFD."""
    return text.replace("\x00", "\ufffd") if "\x00" in text else text


def clean_or_none(text: str | None) -> str | None:
    return clean(text) if text is not None else None


def record_time(timestamp_ms: int | None) -> datetime | None:
    """A Kafka record timestamp as a time; None when the record has none (-1) or one
    no datetime holds (a producer may set any 64-bit value)."""
    if timestamp_ms is None or timestamp_ms == -1:
        return None
    try:
        return _EPOCH + timedelta(milliseconds=timestamp_ms)
    except OverflowError:
        return None


def stored_json(value: Any) -> Any:
    """A record as the JSON PostgreSQL stores (NUL in text replaced): the reference that
    ``stored_json_text`` writes directly."""
    return jsonable(value, clean)


def stored_json_text(value: Any) -> str:
    """``stored_json`` as JSON text: what COPY sends for a ``jsonb`` column."""
    return json_text(value, clean)


def message_text(body: EventBody) -> str | None:
    """The words of an event a reader searches for (None when it has none)."""
    found = searchable_text(body)
    return clean(found) if found else None


class EventRow(NamedTuple):
    """A ``conversation_events`` row, in the table's column order."""

    topic_partition: int
    log_offset: int
    event_id: str
    conversation_id: str
    body_type: str
    occurred_at: datetime
    source: str
    causation_id: str | None
    body: str  # JSON text of the body
    message_text: str | None
    avro: bytes


EVENT_COLUMNS = EventRow._fields


def event_row(partition: int, offset: int, event: ConversationEvent, avro: bytes) -> EventRow:
    return EventRow(
        partition,
        offset,
        clean(event.event_id),
        clean(event.conversation_id),
        type(event.body).__name__,
        event.occurred_at,
        clean(event.source),
        clean(event.causation_id) if event.causation_id is not None else None,
        stored_json_text(event.body),
        message_text(event.body),
        avro,
    )


class SnapshotRow(NamedTuple):
    """A ``conversation_snapshots`` row."""

    conversation_id: str
    snapshot: str  # JSON text of the snapshot
    avro: bytes
    last_partition: int | None
    last_offset: int | None
    event_count: int
    message_count: int
    prompt_tokens: int
    completion_tokens: int
    cost_usd_nanos: int
    deleted: bool
    updated_at: datetime | None
    source_partition: int
    source_offset: int
    title: str | None
    owner: str | None
    tags: list[str]
    attributes: str  # JSON text of the attributes
    forked_from: str | None  # the source conversation of a fork


SNAPSHOT_COLUMNS = SnapshotRow._fields


def snapshot_row(
    partition: int, offset: int, snapshot: ConversationSnapshot, avro: bytes
) -> SnapshotRow:
    last = snapshot.last_position
    return SnapshotRow(
        clean(snapshot.conversation_id),
        stored_json_text(snapshot),
        avro,
        last.partition if last else None,
        last.offset if last else None,
        snapshot.event_count,
        snapshot.message_count,
        snapshot.prompt_tokens,
        snapshot.completion_tokens,
        snapshot.cost_usd_nanos,
        snapshot.deleted,
        snapshot.updated_at,
        partition,
        offset,
        clean_or_none(snapshot.title),
        clean_or_none(snapshot.owner),
        [clean(tag) for tag in snapshot.tags],
        json.dumps({clean(k): clean(v) for k, v in snapshot.attributes.items()}),
        clean(snapshot.forked_from.conversation_id) if snapshot.forked_from else None,
    )


@dataclasses.dataclass
class ConversationTotals:
    """What one batch adds to a ``conversations`` row."""

    topic_partition: int
    event_count: int
    message_count: int
    first_occurred_at: datetime
    last_occurred_at: datetime
    last_offset: int
    failed_turns: int
    compactions: int

    @classmethod
    def of(cls, row: EventRow) -> ConversationTotals:
        return cls(
            row.topic_partition,
            1,
            int(row.body_type in MESSAGE_TYPES),
            row.occurred_at,
            row.occurred_at,
            row.log_offset,
            int(row.body_type == FAILED_TURN),
            int(row.body_type == COMPACTION),
        )

    def add(self, row: EventRow) -> None:
        self.topic_partition = row.topic_partition
        self.event_count += 1
        self.message_count += int(row.body_type in MESSAGE_TYPES)
        self.first_occurred_at = min(self.first_occurred_at, row.occurred_at)
        self.last_occurred_at = max(self.last_occurred_at, row.occurred_at)
        self.last_offset = max(self.last_offset, row.log_offset)
        self.failed_turns += int(row.body_type == FAILED_TURN)
        self.compactions += int(row.body_type == COMPACTION)


def conversation_totals(rows: list[EventRow]) -> dict[str, ConversationTotals]:
    totals: dict[str, ConversationTotals] = {}
    for row in rows:
        found = totals.get(row.conversation_id)
        if found is None:
            totals[row.conversation_id] = ConversationTotals.of(row)
        else:
            found.add(row)
    return totals


class ReplyRow(NamedTuple):
    """A ``chat_replies`` row, as the projector writes it and the queries read it back.

    The token columns are None for a reply without usage; ``published_at`` is the
    record's time (None if it has none).
    """

    topic_partition: int
    log_offset: int
    request_id: str
    conversation_id: str
    status: str
    text: str | None
    error: str | None
    prompt_tokens: int | None
    completion_tokens: int | None
    llm_calls: int | None
    latency_ms: int
    published_at: datetime | None


REPLY_COLUMNS = ReplyRow._fields


def reply_row(partition: int, offset: int, timestamp_ms: int | None, reply: ChatReply) -> ReplyRow:
    usage = reply.usage
    return ReplyRow(
        partition,
        offset,
        clean(reply.request_id),
        clean(reply.conversation_id),
        clean(reply.status.value),
        clean_or_none(reply.text),
        clean_or_none(reply.error),
        usage.prompt_tokens if usage else None,
        usage.completion_tokens if usage else None,
        usage.llm_calls if usage else None,
        reply.latency_ms,
        record_time(timestamp_ms),
    )


class DeadLetterRow(NamedTuple):
    """A ``dead_letters`` row, as the projector writes it and the queries read it back.

    Every value is one PostgreSQL takes, whatever the record holds: a dead letter is
    never set aside itself, so text is cleaned, an origin partition or offset out of
    range (or not given) is None, and ``conversation_id`` is the key only when it is
    UTF-8. ``key`` and ``value`` are the record's bytes (a prefix when ``truncated``
    says so), ``key_bytes``/``value_bytes`` their sizes; ``dead_at`` is the dead
    letter's record time (None if it has none).
    """

    topic_partition: int
    log_offset: int
    reason: str
    message: str
    origin_topic: str
    origin_partition: int | None
    origin_offset: int | None
    consumer: str
    conversation_id: str | None
    dead_at: datetime | None
    key_bytes: int
    value_bytes: int
    truncated: str
    key: bytes | None
    value: bytes | None

    @property
    def position(self) -> tuple[int, int]:
        """``(partition, offset)``: the ``before`` of the next page when this row is last."""
        return (self.topic_partition, self.log_offset)


LETTER_COLUMNS = DeadLetterRow._fields


def letter_row(
    partition: int, offset: int, timestamp_ms: int | None, letter: DeadLetter
) -> DeadLetterRow:
    try:
        conversation_id = clean(letter.key.decode()) if letter.key is not None else None
    except UnicodeDecodeError:
        conversation_id = None
    return DeadLetterRow(
        partition,
        offset,
        clean(letter.reason),
        clean(letter.message),
        clean(letter.topic),
        letter.partition if 0 <= letter.partition < _INT32 else None,
        letter.offset if 0 <= letter.offset < _INT64 else None,
        clean(letter.consumer),
        conversation_id,
        record_time(timestamp_ms),
        len(letter.key or b""),
        len(letter.value or b""),
        clean(letter.truncated),
        letter.key,
        letter.value,
    )
