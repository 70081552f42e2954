"""The list of conversations with counts and last activity; no content is read.

``conversation_page`` serves a console: filters, a total, and keyset pages in
the list's order (last activity, newest first, then conversation id), so a deep
page costs what the first one does. The cursor is opaque to callers; it holds
the last row's sort key, not an offset, so rows arriving between two pages
neither repeat nor skip a row already listed.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import json
from datetime import datetime
from typing import Any

from goaicore.errors import InputError, raises_ours
from goaicore.projection.db import Connection
from goaicore.projection.queries import (
    EVERY_CONVERSATION,
    ConversationFilter,
    ConversationPage,
    ConversationSummary,
)
from goaicore.projection.rows import clean

MAX_PAGE = 1000


# The page's rows are chosen on ``conversations`` alone (its indexes give the order);
# the snapshot and the dead letter count are looked up for those rows only.
_SUMMARY = (
    "SELECT c.conversation_id, c.topic_partition, c.event_count, c.message_count,"
    " c.first_occurred_at, c.last_occurred_at, c.last_offset, s.last_offset, s.deleted,"
    " s.prompt_tokens, s.completion_tokens, s.cost_usd_nanos, c.failed_turns, c.compactions,"
    " (SELECT count(*) FROM dead_letters d WHERE d.conversation_id = c.conversation_id),"
    " s.title, s.owner, s.tags"
    " FROM ({chosen}) c LEFT JOIN conversation_snapshots s USING (conversation_id)"
    " ORDER BY c.last_occurred_at DESC, c.conversation_id"
)
_CHOSEN = (
    "SELECT * FROM conversations c WHERE {where}"
    " ORDER BY c.last_occurred_at DESC, c.conversation_id"
)


def _conditions(where: ConversationFilter) -> tuple[list[str], list[Any]]:
    """SQL conditions on ``conversations c`` and their parameters.

    The flags are written as the partial indexes' predicates, so the planner can
    use those indexes.
    """
    conditions: list[str] = []
    params: list[Any] = []
    if where.text is not None and where.text.strip():
        conditions.append(
            "c.conversation_id IN (SELECT e.conversation_id FROM conversation_events e"
            " WHERE e.search_vector @@ websearch_to_tsquery('english', %s))"
        )
        params.append(clean(where.text))
    if where.active_from is not None:
        conditions.append("c.last_occurred_at >= %s")
        params.append(where.active_from)
    if where.active_until is not None:
        conditions.append("c.last_occurred_at < %s")
        params.append(where.active_until)
    if where.has_failures:
        conditions.append("c.failed_turns > 0")
    if where.has_compactions:
        conditions.append("c.compactions > 0")
    if where.has_dead_letters:
        conditions.append(
            "EXISTS (SELECT 1 FROM dead_letters d WHERE d.conversation_id = c.conversation_id)"
        )
    metadata, values = _metadata_conditions(where)
    if metadata:
        conditions.append(
            "c.conversation_id IN (SELECT s.conversation_id FROM conversation_snapshots s"
            f" WHERE {' AND '.join(metadata)})"
        )
        params += values
    return conditions, params


def _metadata_conditions(where: ConversationFilter) -> tuple[list[str], list[Any]]:
    """Conditions on ``conversation_snapshots s``, which holds the metadata."""
    conditions: list[str] = []
    params: list[Any] = []
    if where.owner is not None:
        conditions.append("s.owner = %s")
        params.append(clean(where.owner))
    if where.tags:
        conditions.append("s.tags @> %s")
        params.append([clean(tag) for tag in where.tags])
    if where.title is not None and where.title.strip():
        conditions.append("strpos(lower(s.title), lower(%s)) > 0")
        params.append(clean(where.title.strip()))
    return conditions, params


def _summaries(
    conn: Connection, conditions: list[str], params: list[Any], limit: int | None
) -> list[ConversationSummary]:
    chosen = _CHOSEN.format(where=" AND ".join(conditions) or "true")
    if limit is not None:
        chosen += " LIMIT %s"
        params = [*params, limit]
    query = _SUMMARY.format(chosen=chosen)
    return [_summary(row) for row in conn.execute(query, params)]


def _summary(row: Any) -> ConversationSummary:
    """A row of ``_SUMMARY``: the figures in field order, then the tags (a text array)."""
    return dataclasses.replace(ConversationSummary(*row[:-1]), tags=tuple(row[-1] or ()))


@raises_ours
def conversations(
    conn: Connection,
    since: datetime | None = None,
    limit: int | None = None,
    where: ConversationFilter = EVERY_CONVERSATION,
) -> list[ConversationSummary]:
    """Conversations matching ``where`` and active at or after ``since``, most recently
    active first."""
    if since is not None:
        where = dataclasses.replace(where, active_from=since)
    conditions, params = _conditions(where)
    return _summaries(conn, conditions, params, limit)


@raises_ours
def conversation_page(
    conn: Connection,
    where: ConversationFilter = EVERY_CONVERSATION,
    limit: int = 50,
    cursor: str | None = None,
) -> ConversationPage:
    """The conversations matching ``where``, most recently active first, ``limit`` at a
    time: the first page without ``cursor``, the next with the page's ``next_cursor``."""
    if not 1 <= limit <= MAX_PAGE:
        raise InputError(f"a page holds 1 to {MAX_PAGE} conversations, not {limit}")
    conditions, params = _conditions(where)
    (total,) = conn.execute(
        f"SELECT count(*) FROM conversations c WHERE {' AND '.join(conditions) or 'true'}",
        params,
    ).fetchone() or (0,)
    if cursor is not None:
        at, conversation_id = decode_cursor(cursor)
        # The first condition bounds the index range; the second is the exact keyset.
        conditions = [
            *conditions,
            "c.last_occurred_at <= %s",
            "(c.last_occurred_at < %s OR c.conversation_id > %s)",
        ]
        params = [*params, at, at, conversation_id]
    rows = _summaries(conn, conditions, params, limit + 1)
    more = len(rows) > limit
    rows = rows[:limit]
    last = rows[-1] if more else None
    return ConversationPage(
        rows,
        int(total),
        encode_cursor(last.last_occurred_at, last.conversation_id) if last else None,
    )


def encode_cursor(last_occurred_at: datetime, conversation_id: str) -> str:
    """The cursor after a row: its sort key, as URL-safe text."""
    key = json.dumps([last_occurred_at.isoformat(), conversation_id], ensure_ascii=False)
    return base64.urlsafe_b64encode(key.encode()).decode().rstrip("=")


def decode_cursor(cursor: str) -> tuple[datetime, str]:
    """The sort key in a cursor; InputError for anything ``encode_cursor`` did not write."""
    try:
        text = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
        at, conversation_id = json.loads(text)
        if not isinstance(at, str) or not isinstance(conversation_id, str):
            raise ValueError("not a time and an id")
        if "\x00" in conversation_id:
            raise ValueError("a NUL character in the id")
        when = datetime.fromisoformat(at)
        if when.tzinfo is None:
            raise ValueError("a time without a zone")
    except (ValueError, TypeError, binascii.Error, UnicodeDecodeError) as err:
        shown = cursor if len(cursor) <= 80 else cursor[:80] + "..."
        raise InputError(
            f"malformed page cursor {shown!r} ({err}): pass the next_cursor of a previous "
            "page unchanged, or none for the first page"
        ) from None
    return when, conversation_id
