"""The console tests: one projection of tests/console/data.py per module, the console
served from it, and a page in headless Chromium (tests/browser.py)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import psycopg
import pytest
from psycopg import sql

from goaicore.config import Settings
from goaicore.kafka import ensure_topics
from tests.brokers import SessionBroker
from tests.browser import browser_page, chromium
from tests.console.data import Audited, log_and_project

__all__ = ["audited", "browser_page", "chromium"]

TOKEN = "console-test-token-0123456789"


@pytest.fixture(scope="module")
def audited(
    kafka_broker: SessionBroker, postgres_url: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Audited]:
    """The conversations of data.py, projected into a schema of their own."""
    prefix = f"c{uuid.uuid4().hex[:12]}"
    settings = Settings(
        env={},
        bootstrap_servers=kafka_broker.bootstrap_servers,
        broker_profile=kafka_broker.profile,
        topic_prefix=prefix,
        partitions=3,
        database_url=postgres_url,
        data_dir=tmp_path_factory.mktemp("console"),
        db_schema=prefix,
        http_tokens=(TOKEN,),
    )
    ensure_topics(settings)
    yield log_and_project(settings)
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(prefix)))
