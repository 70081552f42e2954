"""The projected dead letters: records set aside by any goaicore consumer, why, and
where they came from, newest first (by the dead letter's record time).

A page after another starts from the previous page's last position (keyset), so a
deep page reads what the first does, through ``dead_letters_by_time`` or
``dead_letters_by_conversation``.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from goaicore.errors import InputError, raises_ours
from goaicore.projection.db import Connection
from goaicore.projection.rows import DeadLetterRow

MAX_LIMIT = 1000


_SELECT = (
    "SELECT topic_partition, log_offset, reason, message, origin_topic, origin_partition,"
    " origin_offset, consumer, conversation_id, dead_at, key_bytes, value_bytes, truncated,"
    " key, value FROM dead_letters WHERE "
)


@raises_ours
def dead_letters(
    conn: Connection,
    conversation_id: str | None = None,
    limit: int = 100,
    before: tuple[int, int] | None = None,
) -> list[DeadLetterRow]:
    """Dead letters (of one conversation, or all), newest first; ``before`` is the
    ``position`` of the previous page's last row (InputError if no such row).

    Rows without a time come after all others, by position: they are read by a
    second query, so that each query is one index range in the order listed.
    """
    if not 1 <= limit <= MAX_LIMIT:
        raise InputError(f"a page holds 1 to {MAX_LIMIT} dead letters, not {limit}")
    scope, scope_params = (
        (["conversation_id = %s"], [conversation_id]) if conversation_id is not None else ([], [])
    )
    anchor: tuple[datetime | None, int, int] | None = None
    if before is not None:
        partition, offset = before
        found = conn.execute(
            "SELECT dead_at FROM dead_letters WHERE topic_partition = %s AND log_offset = %s",
            (partition, offset),
        ).fetchone()
        if found is None:
            raise InputError(
                f"no dead letter at partition {partition} offset {offset}: pass the position "
                "of the last row of the previous page"
            )
        anchor = (found[0], partition, offset)
    rows: list[DeadLetterRow] = []
    if anchor is None or anchor[0] is not None:
        timed = [*scope, "dead_at IS NOT NULL"]
        params: list[Any] = list(scope_params)
        if anchor is not None:
            timed.append("(dead_at, topic_partition, log_offset) < (%s, %s, %s)")
            params.extend(anchor)
        rows = _select(conn, timed, params, "dead_at DESC NULLS LAST, topic_partition DESC", limit)
    if len(rows) < limit:
        untimed = [*scope, "dead_at IS NULL"]
        params = list(scope_params)
        if anchor is not None and anchor[0] is None:
            untimed.append("(topic_partition, log_offset) < (%s, %s)")
            params.extend(anchor[1:])
        rows += _select(conn, untimed, params, "topic_partition DESC", limit - len(rows))
    return rows


def _select(
    conn: Connection, conditions: list[str], params: list[Any], order: str, limit: int
) -> list[DeadLetterRow]:
    query = f"{_SELECT}{' AND '.join(conditions)} ORDER BY {order}, log_offset DESC LIMIT %s"
    return [_row(row) for row in conn.execute(query, [*params, limit])]


def _row(row: tuple[Any, ...]) -> DeadLetterRow:
    """A row selected in field order; psycopg returns ``bytea`` as a memoryview."""
    stored = DeadLetterRow(*row)
    return stored._replace(
        key=bytes(stored.key) if stored.key is not None else None,
        value=bytes(stored.value) if stored.value is not None else None,
    )
