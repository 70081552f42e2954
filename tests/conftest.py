"""Shared test fixtures: a real broker and a real PostgreSQL over TCP.

- ``kafka_broker``: one broker for the whole session: a local Apache Kafka node
  where Java 17+ and Maven are here (the standard client profile), else the
  embedded broker (its profile); ``GOAICORE_TEST_BROKER`` forces one (tests/brokers.py).
  The header and the summary of the run name it.
- ``embedded_broker``: the embedded broker, for its own smaller suite (tests/embedded/).
- tests marked ``apache_kafka`` are skipped, with the reason, on the embedded broker.
- ``postgres_url``: a fresh database for the session on the PostgreSQL that
  discovery finds (DATABASE_URL, 127.0.0.1:5432, else embedded), dropped after.
- ``settings``: per test, a unique topic prefix on that broker and database,
  a data dir of its own, and none of the developer's environment or dev.json.
- tests marked ``docker`` are skipped, with the reason, when no Docker engine answers.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from goaicore.config import Settings
from goaicore.kafka import EmbeddedBroker
from goaicore.projection.postgres import discover_postgres, ensure_database
from goaicore.projection.postgres.discovery import drop_database
from tests.brokers import BrokerChoice, SessionBroker, choose_broker, start_apache_kafka

_BROKER = pytest.StashKey[BrokerChoice]()


def pytest_configure(config: pytest.Config) -> None:
    config.stash[_BROKER] = choose_broker()


def session_broker_choice(config: pytest.Config) -> BrokerChoice:
    return config.stash[_BROKER]


def pytest_report_header(config: pytest.Config) -> str:
    return f"broker: {session_broker_choice(config).describe()}"


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    terminalreporter.write_line(f"broker: {session_broker_choice(config).describe()}")


def docker_unavailable_reason() -> str | None:
    """None when a Docker engine answers, else why not."""
    try:
        import docker

        client = docker.from_env(timeout=3)
        try:
            client.ping()
        finally:
            client.close()
    except Exception as err:
        return f"no Docker engine answers ({type(err).__name__}: {str(err)[:160]})"
    return None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    choice = session_broker_choice(config)
    if not choice.apache:
        for item in items:
            if item.get_closest_marker("apache_kafka"):
                item.add_marker(
                    pytest.mark.skip(reason=f"needs Apache Kafka: {choice.why_not_kafka}")
                )
    docker_items = [item for item in items if item.get_closest_marker("docker")]
    if not docker_items:
        return
    reason = docker_unavailable_reason()
    if reason is not None:
        for item in docker_items:
            item.add_marker(pytest.mark.skip(reason=reason))


@pytest.fixture(scope="session")
def kafka_broker(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[SessionBroker]:
    folder = tmp_path_factory.mktemp("broker")
    if session_broker_choice(request.config).apache:
        kafka = start_apache_kafka(folder / "kafka")
        try:
            yield SessionBroker(kafka.bootstrap_servers, "standard", kafka)
        finally:
            kafka.stop()
        return
    with EmbeddedBroker(log_path=folder / "broker.log") as broker:
        yield SessionBroker(broker.bootstrap_servers, "embedded")


@pytest.fixture(scope="session")
def embedded_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedBroker]:
    log = tmp_path_factory.mktemp("embedded") / "broker.log"
    with EmbeddedBroker(log_path=log) as broker:
        yield broker


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    """A database of the session's own.

    An embedded server's data goes in a folder of its own, outside pytest's
    temporary root: another pytest session starting meanwhile resets that root
    to owner-only access, and the server runs as another user (it refuses root).
    """
    env_url = os.environ.get("DATABASE_URL")
    folder = Path(tempfile.mkdtemp(prefix="goaicore-test-postgres-"))
    base = Settings(env={"DATABASE_URL": env_url} if env_url else {}, data_dir=folder)
    handle = discover_postgres(base)
    name = f"goaicore_test_{uuid.uuid4().hex[:10]}"
    url = ensure_database(handle.url, name)
    try:
        yield url
    finally:
        drop_database(handle.url, name)
        handle.stop()
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    path = tmp_path / "data"
    path.mkdir()
    return path


@pytest.fixture
def settings(kafka_broker: SessionBroker, postgres_url: str, data_dir: Path) -> Settings:
    return kafka_broker.settings(data_dir, "t", database_url=postgres_url)
