"""PostgreSQL: find a server (DATABASE_URL, then 127.0.0.1:5432, then embedded)."""

from goaicore.projection.postgres.discovery import (
    DatabaseHandle,
    discover_postgres,
    ensure_database,
    with_database,
)
from goaicore.projection.postgres.embedded import EmbeddedPostgres, PostgresStartError

__all__ = [
    "DatabaseHandle",
    "EmbeddedPostgres",
    "PostgresStartError",
    "discover_postgres",
    "ensure_database",
    "with_database",
]
