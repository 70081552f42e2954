"""PostgreSQL: find a server (DATABASE_URL, then 127.0.0.1:5432, then embedded)."""

from goaicore.database.discovery import (
    DatabaseHandle,
    discover_postgres,
    ensure_database,
    with_database,
)
from goaicore.database.embedded import EmbeddedPostgres, PostgresStartError

__all__ = [
    "DatabaseHandle",
    "EmbeddedPostgres",
    "PostgresStartError",
    "discover_postgres",
    "ensure_database",
    "with_database",
]
