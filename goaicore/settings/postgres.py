"""PostgreSQL's settings: the projection's database and schema, and password masking."""

from __future__ import annotations

import re
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from goaicore.errors import ConfigError
from goaicore.settings.declare import Setting

_DB_SCHEMA_RE = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")
_CONNINFO_PASSWORD = re.compile(r"(password\s*=\s*)('(?:[^'\\]|\\.)*'|\S+)", re.IGNORECASE)


def _parse_database_url(name: str, raw: str) -> str:
    if not raw.startswith(("postgresql://", "postgres://")):
        raise ConfigError(f"{name}={raw!r}: must start with postgresql:// or postgres://")
    return raw


def parse_db_schema(name: str, raw: str) -> str:
    if not _DB_SCHEMA_RE.match(raw):
        raise ConfigError(f"{name}={raw!r}: use 1 to 63 of a-z 0-9 _, not starting with a digit")
    return raw


DATABASE: tuple[Setting, ...] = (
    Setting(
        "database_url",
        "DATABASE_URL",
        "127.0.0.1:5432 if it answers, else an embedded PostgreSQL",
        "PostgreSQL URL, `postgresql://user@host:port/db`.",
        _parse_database_url,
        passed=True,
    ),
    Setting(
        "db_schema",
        "GOAICORE_DB_SCHEMA",
        "`public`",
        "PostgreSQL schema of the projection (tables of one topic prefix); created if missing.",
        parse_db_schema,
        "public",
    ),
)
"""Where the projection is: ``database_url`` falls back to the dev stack's, and so
does ``db_schema`` with it."""


def mask_password(url: str) -> str:
    """``url`` (a URL or a ``key=value`` connection string) with any password as ``***``."""
    if "://" not in url:
        return _CONNINFO_PASSWORD.sub(r"\1***", url)
    parts = urlsplit(url)
    netloc = parts.netloc
    if "@" in netloc:
        credentials, host = netloc.rsplit("@", 1)
        if ":" in credentials:
            netloc = f"{credentials.split(':', 1)[0]}:***@{host}"
    query = urlencode(
        [(k, "***" if k.lower() == "password" else v) for k, v in parse_qsl(parts.query)],
        safe="*",
    )
    return urlunsplit(parts._replace(netloc=netloc, query=query))
