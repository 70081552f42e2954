"""Connections to the projection: one PostgreSQL schema per topic prefix.

Every query of the audit store names its tables unqualified; the connection's
``search_path`` points at the schema (``GOAICORE_DB_SCHEMA``), so the same
queries serve any schema and tests can isolate themselves in one each.
"""

from __future__ import annotations

import hashlib
from typing import Any

import psycopg

from goaicore.errors import EXIT_CONFIG, EXIT_FAILED, DatabaseError, raises_ours
from goaicore.settings import Settings

Connection = psycopg.Connection[Any]


class ProjectionMissingError(DatabaseError, LookupError):
    """The schema holds no projection yet (the projector has never run on it)."""

    exit_code = EXIT_CONFIG


class ForeignProjectionError(DatabaseError, RuntimeError):
    """The schema already holds the projection of other topics."""

    exit_code = EXIT_CONFIG


class PositionConflictError(DatabaseError, RuntimeError):
    """Stored positions moved under a projector: another one writes the same schema."""

    exit_code = EXIT_FAILED


class DatabaseUnreachableError(DatabaseError, ConnectionError):
    """PostgreSQL refused or did not answer the connection."""


CONNECT_TIMEOUT = 5
"""Seconds a connection attempt may take before the command gives up."""


def connect(settings: Settings, autocommit: bool = True) -> Connection:
    """A connection whose search_path is the settings' projection schema.

    A server that refuses or does not answer is one :class:`DatabaseUnreachableError`
    line naming host, port and database (never the password), within a few seconds.
    """
    url = settings.require_database_url()
    try:
        return psycopg.connect(
            url,
            autocommit=autocommit,
            connect_timeout=CONNECT_TIMEOUT,
            options=f"-c search_path={settings.db_schema}",
        )
    except psycopg.OperationalError as err:
        reason = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise DatabaseUnreachableError(
            f"PostgreSQL at {where(url)} did not accept the connection ({reason}); is it "
            "running? Set DATABASE_URL, or start the dev stack with `make run`"
        ) from None


def where(url: str) -> str:
    """``host:port/database`` of a connection URL: what to name in a message, no secret."""
    from psycopg.conninfo import conninfo_to_dict

    try:
        parts = conninfo_to_dict(url)
    except psycopg.ProgrammingError:
        return "the configured DATABASE_URL"
    return f"{parts.get('host', 'localhost')}:{parts.get('port', 5432)}/{parts.get('dbname', '')}"


def lock_key(name: str) -> int:
    """A stable signed 64-bit advisory lock key for ``name`` (the same in every process)."""
    digest = hashlib.blake2b(name.encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big", signed=True)


@raises_ours
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
