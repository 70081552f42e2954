"""The list of conversations with counts and last activity; no content is read."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from goaicore.errors import raises_ours
from goaicore.projection.db import Connection


@dataclass(frozen=True)
class ConversationSummary:
    """One conversation: its event counts, first and last activity, snapshot totals.

    Activity is the events' ``occurred_at`` (the publishers' clocks). The
    snapshot fields are None until the conversation's snapshot is projected.
    """

    conversation_id: str
    partition: int
    event_count: int
    message_count: int
    first_occurred_at: datetime
    last_occurred_at: datetime
    last_offset: int
    snapshot_offset: int | None
    deleted: bool | None
    prompt_tokens: int | None
    completion_tokens: int | None
    cost_usd_nanos: int | None


@raises_ours
def conversations(
    conn: Connection, since: datetime | None = None, limit: int | None = None
) -> list[ConversationSummary]:
    """Conversations active at or after ``since``, most recently active first."""
    params: list[Any] = []
    query = (
        "SELECT c.conversation_id, c.topic_partition, c.event_count, c.message_count,"
        " c.first_occurred_at, c.last_occurred_at, c.last_offset, s.last_offset, s.deleted,"
        " s.prompt_tokens, s.completion_tokens, s.cost_usd_nanos"
        " FROM conversations c"
        " LEFT JOIN conversation_snapshots s USING (conversation_id)"
    )
    if since is not None:
        query += " WHERE c.last_occurred_at >= %s"
        params.append(since)
    query += " ORDER BY c.last_occurred_at DESC, c.conversation_id"
    if limit is not None:
        query += " LIMIT %s"
        params.append(limit)
    return [ConversationSummary(*row) for row in conn.execute(query, params)]
