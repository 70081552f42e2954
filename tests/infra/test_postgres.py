"""PostgreSQL discovery order (DATABASE_URL, local server, embedded) and the embedded server."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from goaicore.config import Settings
from goaicore.net import free_loopback_port, port_open
from goaicore.projection.postgres import EmbeddedPostgres, discover_postgres


@pytest.fixture(scope="module")
def other_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedPostgres]:
    """A second real server standing in for 'the one on 127.0.0.1:5432'."""
    with EmbeddedPostgres(tmp_path_factory.mktemp("other")) as server:
        yield server


def _query(url: str) -> int:
    with psycopg.connect(url, connect_timeout=5) as conn:
        row = conn.execute("SELECT 41 + 1").fetchone()
    assert row is not None
    return int(row[0])


def test_database_url_wins_over_a_local_server(
    other_server: EmbeddedPostgres, postgres_url: str, tmp_path: Path
) -> None:
    settings = Settings(env={"DATABASE_URL": postgres_url}, data_dir=tmp_path)
    handle = discover_postgres(settings, local_server=(other_server.host, other_server.port))
    assert (handle.source, handle.url) == ("DATABASE_URL", postgres_url)
    assert handle.embedded is None
    assert not (tmp_path / "postgres").exists()
    assert _query(handle.url) == 42


def test_local_server_is_used_when_it_answers(
    other_server: EmbeddedPostgres, tmp_path: Path
) -> None:
    settings = Settings(env={}, data_dir=tmp_path)
    handle = discover_postgres(settings, local_server=(other_server.host, other_server.port))
    assert handle.source == "local"
    assert f":{other_server.port}/" in handle.url
    assert handle.embedded is None
    assert not (tmp_path / "postgres").exists()
    assert _query(handle.url) == 42


def test_embedded_fallback_keeps_its_data_between_runs(tmp_path: Path) -> None:
    settings = Settings(env={}, data_dir=tmp_path)
    nobody = ("127.0.0.1", free_loopback_port())
    first = discover_postgres(settings, local_server=nobody)
    assert first.source == "embedded"
    assert (tmp_path / "postgres" / "pgdata" / "PG_VERSION").exists()
    with psycopg.connect(first.url) as conn:
        conn.execute("CREATE TABLE kept (note text)")
        conn.execute("INSERT INTO kept VALUES ('still here')")
    port = int(first.url.rsplit(":", 1)[1].split("/")[0])
    first.stop()
    assert not port_open("127.0.0.1", port)

    second = discover_postgres(settings, local_server=nobody)
    try:
        assert second.source == "embedded"
        with psycopg.connect(second.url) as conn:
            assert conn.execute("SELECT note FROM kept").fetchall() == [("still here",)]
    finally:
        second.stop()


def test_a_server_already_running_on_the_folder_is_reused_not_stopped(tmp_path: Path) -> None:
    owner = EmbeddedPostgres(tmp_path / "pg").start()
    try:
        reuser = EmbeddedPostgres(tmp_path / "pg").start()
        assert reuser.port == owner.port
        assert not reuser.started_here
        reuser.stop()
        assert _query(owner.url) == 42  # still running: the reuser did not start it
    finally:
        owner.stop()
    assert not port_open("127.0.0.1", owner.port)
