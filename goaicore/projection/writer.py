"""Write one batch in one transaction: rows and the projector's positions together.

The positions table is the projector's only record of what it has read, and
it changes in the same transaction as the rows: after a crash either both or
neither are there, so a restart (which seeks to the stored positions) writes
every row exactly once. Each position moves with a compare-and-set on the value
this projector read at start, so a second writer on the same schema fails its
transaction instead of writing twice.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence
from typing import Any, TypeVar

from goaicore.projection.batch import Batch, TopicPartitionKey
from goaicore.projection.db import Connection, ForeignProjectionError, PositionConflictError
from goaicore.projection.erasure import redact_erased
from goaicore.projection.rows import (
    EVENT_COLUMNS,
    LETTER_COLUMNS,
    REPLY_COLUMNS,
    SNAPSHOT_COLUMNS,
    DeadLetterRow,
    EventRow,
    ReplyRow,
    conversation_totals,
)

log = logging.getLogger(__name__)


def load_positions(
    conn: Connection, partitions: Iterable[TopicPartitionKey]
) -> dict[TopicPartitionKey, int]:
    """The next offset to read per topic partition; new partitions start at 0."""
    wanted = sorted(set(partitions))
    topics = sorted({topic for topic, _ in wanted})
    with conn.transaction():
        foreign = [
            row[0]
            for row in conn.execute(
                "SELECT DISTINCT topic FROM projector_positions WHERE NOT topic = ANY(%s)",
                (topics,),
            )
        ]
        if foreign:
            raise ForeignProjectionError(
                f"this PostgreSQL schema holds the projection of {', '.join(sorted(foreign))}; "
                "set GOAICORE_DB_SCHEMA to another schema for these topics"
            )
        with conn.cursor() as cur:
            cur.executemany(
                "INSERT INTO projector_positions (topic, topic_partition, next_offset)"
                " VALUES (%s, %s, 0) ON CONFLICT DO NOTHING",
                wanted,
            )
        rows = conn.execute(
            "SELECT topic, topic_partition, next_offset FROM projector_positions"
            " WHERE topic = ANY(%s)",
            (topics,),
        ).fetchall()
    return {(str(t), int(p)): int(o) for t, p, o in rows}


def write_batch(
    conn: Connection,
    batch: Batch,
    expected: dict[TopicPartitionKey, int],
    before_commit: Callable[[], None] = lambda: None,
    row_by_row: bool = False,
    on_refused: Callable[[Any, str], None] = lambda record, why: None,
) -> None:
    """Write ``batch`` and move the positions from ``expected``, atomically.

    ``row_by_row`` writes each row in a savepoint, and a row PostgreSQL refuses
    is passed to ``on_refused`` (as its record) and left out (the slow path, after a
    batch failed); a refused dead letter is only logged, never set aside again.
    """
    with conn.transaction():
        events = batch.events
        if row_by_row:
            events = _insert_one_by_one(
                conn, _INSERT_EVENT, events, lambda row, why: on_refused(_source(batch, row), why)
            )
            _insert_one_by_one(
                conn,
                _INSERT_REPLY,
                batch.replies,
                lambda row, why: on_refused(
                    batch.reply_sources[(row.topic_partition, row.log_offset)], why
                ),
            )
            _insert_one_by_one(conn, _INSERT_LETTER, batch.dead_letters, _letter_refused)
        else:
            _copy(conn, "conversation_events", EVENT_COLUMNS, events)
            _copy(conn, "chat_replies", REPLY_COLUMNS, batch.replies)
            _copy(conn, "dead_letters", LETTER_COLUMNS, batch.dead_letters)
        _add_conversation_totals(conn, events)
        redact_erased(conn, events)
        _write_snapshots(conn, batch, row_by_row, on_refused)
        _advance(conn, expected, batch.positions)
        before_commit()


def _copy(conn: Connection, table: str, columns: tuple[str, ...], rows: Sequence[Any]) -> None:
    if not rows:
        return
    with conn.cursor() as cur, cur.copy(f"COPY {table} ({', '.join(columns)}) FROM STDIN") as copy:
        for row in rows:
            copy.write_row(row)


def _placeholders(columns: tuple[str, ...]) -> str:
    """One placeholder per column; JSON text goes into the jsonb columns by a cast."""
    return ", ".join("%s::jsonb" if c in ("body", "snapshot") else "%s" for c in columns)


def _insert(table: str, columns: tuple[str, ...]) -> str:
    return f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({_placeholders(columns)})"


_INSERT_EVENT = _insert("conversation_events", EVENT_COLUMNS)
_INSERT_REPLY = _insert("chat_replies", REPLY_COLUMNS)
_INSERT_LETTER = _insert("dead_letters", LETTER_COLUMNS)


def _source(batch: Batch, row: EventRow) -> Any:
    return batch.event_sources[(row.topic_partition, row.log_offset)]


def _letter_refused(row: DeadLetterRow, why: str) -> None:
    """A dead letter is never sent to the dead letters again (a loop): the row is left
    out and said so; the record stays in the topic. Rows are built so that this should
    not happen (text cleaned, numbers in range)."""
    log.error(
        "PostgreSQL refused the dead letter at partition %d offset %d (%s); left out of the "
        "projection, it stays in the topic",
        row.topic_partition,
        row.log_offset,
        why,
    )


R = TypeVar("R", EventRow, ReplyRow, DeadLetterRow)


def _insert_one_by_one(
    conn: Connection, statement: str, rows: list[R], on_refused: Callable[[R, str], None]
) -> list[R]:
    """Insert each row in a savepoint; the rows PostgreSQL took."""
    import psycopg

    kept: list[R] = []
    for row in rows:
        try:
            with conn.transaction():
                conn.execute(statement, row)
        except psycopg.DataError as err:
            on_refused(row, str(err))
            continue
        kept.append(row)
    return kept


def _add_conversation_totals(conn: Connection, rows: list[EventRow]) -> None:
    """One statement for the batch: each column's values as one array (a row per
    conversation), rather than a statement per conversation."""
    totals = sorted(conversation_totals(rows).items())
    if not totals:
        return
    conn.execute(
        "INSERT INTO conversations AS c (conversation_id, topic_partition, event_count,"
        " message_count, first_occurred_at, last_occurred_at, last_offset, failed_turns,"
        " compactions)"
        " SELECT * FROM unnest(%s::text[], %s::integer[], %s::bigint[], %s::bigint[],"
        " %s::timestamptz[], %s::timestamptz[], %s::bigint[], %s::bigint[], %s::bigint[])"
        " ON CONFLICT (conversation_id) DO UPDATE SET"
        " topic_partition = EXCLUDED.topic_partition,"
        " event_count = c.event_count + EXCLUDED.event_count,"
        " message_count = c.message_count + EXCLUDED.message_count,"
        " first_occurred_at = least(c.first_occurred_at, EXCLUDED.first_occurred_at),"
        " last_occurred_at = greatest(c.last_occurred_at, EXCLUDED.last_occurred_at),"
        " last_offset = greatest(c.last_offset, EXCLUDED.last_offset),"
        " failed_turns = c.failed_turns + EXCLUDED.failed_turns,"
        " compactions = c.compactions + EXCLUDED.compactions,"
        " projected_at = now()",
        (
            [conv for conv, _ in totals],
            [t.topic_partition for _, t in totals],
            [t.event_count for _, t in totals],
            [t.message_count for _, t in totals],
            [t.first_occurred_at for _, t in totals],
            [t.last_occurred_at for _, t in totals],
            [t.last_offset for _, t in totals],
            [t.failed_turns for _, t in totals],
            [t.compactions for _, t in totals],
        ),
    )


_UPSERT_SNAPSHOT = (
    f"INSERT INTO conversation_snapshots ({', '.join(SNAPSHOT_COLUMNS)})"
    f" VALUES ({_placeholders(SNAPSHOT_COLUMNS)})"
    " ON CONFLICT (conversation_id) DO UPDATE SET "
    + ", ".join(f"{c} = EXCLUDED.{c}" for c in SNAPSHOT_COLUMNS[1:])
    + ", projected_at = now()"
)


def _write_snapshots(
    conn: Connection, batch: Batch, row_by_row: bool, on_refused: Callable[[Any, str], None]
) -> None:
    snapshots = batch.snapshots
    gone = sorted(conv for conv, row in snapshots.items() if row is None)
    if gone:
        conn.execute("DELETE FROM conversation_snapshots WHERE conversation_id = ANY(%s)", (gone,))
    rows = [row for row in snapshots.values() if row]
    if not rows:
        return
    if not row_by_row:
        with conn.cursor() as cur:
            cur.executemany(_UPSERT_SNAPSHOT, rows)
        return
    import psycopg

    for row in rows:
        try:
            with conn.transaction():
                conn.execute(_UPSERT_SNAPSHOT, row)
        except psycopg.DataError as err:  # the stored snapshot stays until the next one
            on_refused(batch.snapshot_sources[row.conversation_id], str(err))


def _advance(
    conn: Connection,
    expected: dict[TopicPartitionKey, int],
    positions: dict[TopicPartitionKey, int],
) -> None:
    for (topic, partition), next_offset in sorted(positions.items()):
        was = expected[(topic, partition)]
        moved = conn.execute(
            "UPDATE projector_positions SET next_offset = %s, updated_at = now()"
            " WHERE topic = %s AND topic_partition = %s AND next_offset = %s",
            (next_offset, topic, partition, was),
        ).rowcount
        if moved != 1:
            raise PositionConflictError(
                f"the stored position of {topic}[{partition}] is no longer {was}: "
                "another projector writes this schema"
            )
