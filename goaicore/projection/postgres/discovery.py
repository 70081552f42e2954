"""Find PostgreSQL: ``DATABASE_URL``, else 127.0.0.1:5432 if it answers, else embedded.

The embedded server's data folder lives under the data dir and is kept
between runs. :meth:`DatabaseHandle.stop` stops only what discovery started.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal
from urllib.parse import urlsplit, urlunsplit

from goaicore.projection.postgres.embedded import EmbeddedPostgres
from goaicore.settings import Settings

log = logging.getLogger(__name__)

Source = Literal["DATABASE_URL", "local", "embedded"]
LOCAL_SERVER = ("127.0.0.1", 5432)


@dataclass
class DatabaseHandle:
    """A PostgreSQL server URL, where it came from, and how to stop it if ours."""

    url: str
    source: Source
    embedded: EmbeddedPostgres | None = field(default=None, repr=False)

    def stop(self) -> None:
        if self.embedded is not None:
            self.embedded.stop()
            self.embedded = None


def discover_postgres(
    settings: Settings,
    local_server: tuple[str, int] = LOCAL_SERVER,
    embedded_dir: Path | None = None,
    adopt_orphan: bool = False,
) -> DatabaseHandle:
    """The first PostgreSQL of: DATABASE_URL, a local server, an embedded one.

    ``adopt_orphan``: an embedded server already running on the folder (left by
    an owner that died) becomes this handle's to stop.
    """
    if settings.database_url:
        return DatabaseHandle(settings.database_url, "DATABASE_URL")
    host, port = local_server
    local_url = f"postgresql://postgres@{host}:{port}/postgres"
    reason = answers(local_url)
    if reason is None:
        return DatabaseHandle(local_url, "local")
    log.info("no PostgreSQL at %s:%s (%s); starting an embedded one", host, port, reason)
    folder = embedded_dir or settings.data_dir / "postgres"
    server = EmbeddedPostgres(folder, adopt=adopt_orphan).start()
    return DatabaseHandle(server.url, "embedded", server if server.started_here else None)


def answers(url: str, timeout_s: int = 2) -> str | None:
    """None when a query succeeds at ``url``, else why it did not."""
    import psycopg

    try:
        with psycopg.connect(url, connect_timeout=timeout_s) as conn:
            conn.execute("SELECT 1")
    except psycopg.Error as err:
        return str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
    return None


def with_database(url: str, database: str) -> str:
    """The same server URL pointing at another database."""
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc, "/" + database, parts.query, parts.fragment))


def ensure_database(url: str, database: str) -> str:
    """Create ``database`` on the server at ``url`` if missing; return its URL."""
    import psycopg
    from psycopg import sql

    with psycopg.connect(url, autocommit=True) as conn:
        exists = conn.execute(
            "SELECT 1 FROM pg_database WHERE datname = %s", (database,)
        ).fetchone()
        if exists is None:
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(database)))
    return with_database(url, database)


def drop_database(url: str, database: str) -> None:
    """Drop ``database`` (closing its other sessions) on the server at ``url``."""
    import psycopg
    from psycopg import sql

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(
            sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(database))
        )
