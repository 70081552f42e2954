"""A conversation's stored events, oldest first, filtered by type and time."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from goaicore.errors import InputError, raises_ours
from goaicore.projection.db import Connection
from goaicore.records import EVENT_BODY_TYPES, ConversationEvent
from goaicore.records.avro.api import decode_event

BODY_TYPES = tuple(t.__name__ for t in EVENT_BODY_TYPES)


@dataclass(frozen=True)
class StoredEvent:
    """One ``conversation_events`` row: the event's log position, envelope and body."""

    partition: int
    offset: int
    event_id: str
    conversation_id: str
    body_type: str
    occurred_at: datetime
    source: str
    causation_id: str | None
    body: dict[str, Any]
    text: str | None
    avro: bytes

    def event(self) -> ConversationEvent:
        """The event exactly as logged, decoded from the stored Avro bytes."""
        return decode_event(self.avro)


def check_types(types: Sequence[str]) -> None:
    unknown = sorted(set(types) - set(BODY_TYPES))
    if unknown:
        raise InputError(
            f"unknown event type {', '.join(unknown)} (known: {', '.join(BODY_TYPES)})"
        )


@raises_ours
def history(
    conn: Connection,
    conversation_id: str,
    types: Sequence[str] = (),
    since: datetime | None = None,
    until: datetime | None = None,
    limit: int | None = None,
) -> list[StoredEvent]:
    """The conversation's events in log order; ``since``/``until`` bound occurred_at (inclusive)."""
    check_types(types)
    where = ["conversation_id = %s"]
    params: list[Any] = [conversation_id]
    if types:
        where.append("body_type = ANY(%s)")
        params.append(list(types))
    if since is not None:
        where.append("occurred_at >= %s")
        params.append(since)
    if until is not None:
        where.append("occurred_at <= %s")
        params.append(until)
    query = (
        "SELECT topic_partition, log_offset, event_id, conversation_id, body_type, occurred_at,"
        " source, causation_id, body, message_text, avro FROM conversation_events"
        f" WHERE {' AND '.join(where)} ORDER BY topic_partition, log_offset"
    )
    if limit is not None:
        query += " LIMIT %s"
        params.append(limit)
    rows = conn.execute(query, params).fetchall()
    return [_stored(row) for row in rows]


def _stored(row: tuple[Any, ...]) -> StoredEvent:
    """A row selected in field order; psycopg returns the Avro ``bytea`` as a memoryview."""
    stored = StoredEvent(*row)
    return replace(stored, avro=bytes(stored.avro))
