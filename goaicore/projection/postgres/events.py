"""A conversation's stored events, oldest first, filtered by type and time."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime
from typing import Any

from goaicore.errors import raises_ours
from goaicore.projection.db import Connection
from goaicore.projection.queries import StoredEvent, check_types


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
