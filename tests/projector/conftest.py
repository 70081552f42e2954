"""Fixtures for the projector tests: topics and a PostgreSQL schema per test."""

from __future__ import annotations

from collections.abc import Iterator

import psycopg
import pytest
from psycopg import sql

from goaicore.config import Settings
from goaicore.kafka import ensure_topics


@pytest.fixture
def projection(settings: Settings) -> Iterator[Settings]:
    """The test's topics, projected into a schema of its own (named after its prefix)."""
    ensure_topics(settings)
    projected = settings.with_overrides(db_schema=settings.topic_prefix)
    yield projected
    with psycopg.connect(settings.require_database_url(), autocommit=True) as conn:
        conn.execute(
            sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(projected.db_schema))
        )
