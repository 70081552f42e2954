"""Clearing a projection: only when asked, only the schema and topic prefix named.

The projector never clears anything on its own. This is the one way to empty a
projection (to project its log again from the start, or to free the schema for
another log): the caller names both the schema and the topic prefix, and a
schema that holds another prefix's projection is refused with nothing touched.
"""

from __future__ import annotations

from dataclasses import dataclass

from psycopg import sql

from goaicore.errors import raises_ours
from goaicore.projection.db import Connection, ForeignProjectionError, require_projection

PROJECTION_TABLES = (
    "conversation_events",
    "conversation_snapshots",
    "conversations",
    "chat_replies",
    "dead_letters",
)


@dataclass(frozen=True)
class ClearedProjection:
    """What a clear removed: rows per table, and the positions forgotten."""

    schema: str
    prefix: str
    rows: dict[str, int]
    positions: int


@raises_ours
def clear_projection(conn: Connection, schema: str, prefix: str) -> ClearedProjection:
    """Empty ``schema``'s projection of ``prefix``'s topics; refuse if it holds another's."""
    require_projection(conn, schema)
    with conn.transaction():
        # A schema the projector has not migrated since lacks the newer tables.
        present = {
            str(row[0])
            for row in conn.execute(
                "SELECT tablename FROM pg_tables WHERE schemaname = %s", (schema,)
            )
        }
        tables = {
            name: sql.Identifier(schema, name)
            for name in (*PROJECTION_TABLES, "projector_positions")
            if name in present
        }
        for table in tables.values():  # no projector writes while we look, then clear
            conn.execute(sql.SQL("LOCK TABLE {} IN ACCESS EXCLUSIVE MODE").format(table))
        topics = [
            str(row[0])
            for row in conn.execute(
                sql.SQL("SELECT DISTINCT topic FROM {}").format(tables["projector_positions"])
            )
        ]
        foreign = sorted(t for t in topics if not t.startswith(f"{prefix}."))
        if foreign:
            raise ForeignProjectionError(
                f"schema {schema} holds the projection of {', '.join(foreign)}, not of topic "
                f"prefix {prefix!r}: nothing was cleared"
            )
        rows = {}
        for name in PROJECTION_TABLES:
            if name not in tables:
                continue
            counted = conn.execute(sql.SQL("SELECT count(*) FROM {}").format(tables[name]))
            (rows[name],) = counted.fetchone() or (0,)
        positions = conn.execute(
            sql.SQL("SELECT count(*) FROM {}").format(tables["projector_positions"])
        ).fetchone()
        conn.execute(sql.SQL("TRUNCATE {}").format(sql.SQL(", ").join(tables.values())))
    return ClearedProjection(schema, prefix, rows, int(positions[0]) if positions else 0)
