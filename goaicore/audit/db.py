"""Connections to the projection: one PostgreSQL schema per topic prefix.

Every query of the audit store names its tables unqualified; the connection's
``search_path`` points at the schema (``GOAICORE_DB_SCHEMA``), so the same
queries serve any schema and tests can isolate themselves in one each.
"""

from __future__ import annotations

import hashlib
from typing import Any

import psycopg

from goaicore.config import Settings

Connection = psycopg.Connection[Any]


class ProjectionMissingError(LookupError):
    """The schema holds no projection yet (the projector has never run on it)."""


class ForeignProjectionError(RuntimeError):
    """The schema already holds the projection of other topics."""


class PositionConflictError(RuntimeError):
    """Stored positions moved under a projector: another one writes the same schema."""


def connect(settings: Settings, autocommit: bool = True) -> Connection:
    """A connection whose search_path is the settings' projection schema."""
    return psycopg.connect(
        settings.require_database_url(),
        autocommit=autocommit,
        options=f"-c search_path={settings.schema}",
    )


def lock_key(name: str) -> int:
    """A stable signed 64-bit advisory lock key for ``name`` (the same in every process)."""
    digest = hashlib.blake2b(name.encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big", signed=True)


def require_projection(conn: Connection, schema: str) -> None:
    """Raise ProjectionMissingError unless the projector has created its tables here."""
    row = conn.execute(
        "SELECT 1 FROM pg_tables WHERE schemaname = %s AND tablename = 'conversation_events'",
        (schema,),
    ).fetchone()
    if row is None:
        raise ProjectionMissingError(
            f"no projection in PostgreSQL schema {schema!r} "
            "(start `goaicore projector`, or set GOAICORE_DB_SCHEMA)"
        )
