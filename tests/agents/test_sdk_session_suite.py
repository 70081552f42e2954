"""The OpenAI Agents SDK's own session tests, run against session factories.

``run_sdk_session_suite`` runs the three session test files of the SDK's sdist
(fetched once into the cache) in a pytest of their own, with ``SQLiteSession`` bound
to the factory. The SDK's ``SQLiteSession`` itself must pass every test, those of the
SQLite-only table included; ``GoaicoreSession``, over the in-memory store and over
Apache Kafka (a store worker folding, the suite's process given the deployment's
settings), must pass every other one and fail each of the table's (strict xfail).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from agents.memory import SessionSettings

from goaicore.config import Settings
from goaicore.devstack.worker_process import settings_env
from goaicore.records.validation import check_conversation_id
from goaicore.testing.agents_sdk_suite import (
    FACTORY_ENV,
    GOAICORE_KAFKA,
    GOAICORE_MEMORY,
    SQLITE_ONLY,
    SQLITE_SELF_CHECK,
    goaicore_memory_session,
    run_sdk_session_suite,
    sdk_conversation_id,
)

# openai-agents 0.24.0: 98 tests in the three files; the table's 16 tests are 18 node
# ids (one of them runs for add, pop and clear).
SDK_SESSION_TESTS = 98
SQLITE_ONLY_NODES = 18

FACTORIES = [
    pytest.param(SQLITE_SELF_CHECK, False, id="sqlite-self-check"),
    pytest.param(GOAICORE_MEMORY, True, id="goaicore-memory"),
    pytest.param(GOAICORE_KAFKA, True, id="goaicore-kafka", marks=pytest.mark.integration),
]


@pytest.mark.parametrize(("factory", "table_applies"), FACTORIES)
def test_sdk_session_suite(
    factory: str, table_applies: bool, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    env = None
    if factory == GOAICORE_KAFKA:
        deployment: Settings = request.getfixturevalue("kafka_deployment")
        env = settings_env(deployment)
    result = run_sdk_session_suite(factory, env=env, junit_path=tmp_path / "junit.xml")
    print(result.summary())

    assert result.problems() == [], result.summary()
    assert result.nodes("failed") == []
    assert result.nodes("error") == []
    assert result.total == SDK_SESSION_TESTS, result.summary()
    marked = SQLITE_ONLY_NODES if table_applies else 0
    assert result.counts == {
        "passed": SDK_SESSION_TESTS - marked,
        "failed": 0,
        "error": 0,
        "xfailed": marked,
        "xpassed": 0,
        "skipped": 0,
    }
    in_table = [node for node in result.outcomes if node.split("[", 1)[0] in SQLITE_ONLY]
    assert len(in_table) == SQLITE_ONLY_NODES
    assert {node.split("[", 1)[0] for node in in_table} == set(SQLITE_ONLY)
    if table_applies:
        assert list(result.marked) == in_table
        assert result.nodes("xfailed") == in_table
    else:
        assert result.marked == ()
        assert all(result.outcomes[node] == "passed" for node in in_table)


def test_a_factory_that_does_not_import_stops_the_run(tmp_path: Path) -> None:
    with pytest.raises(RuntimeError, match="did not run") as caught:
        run_sdk_session_suite("goaicore.no_such_module:factory", junit_path=tmp_path / "j.xml")

    assert f"{FACTORY_ENV}=goaicore.no_such_module:factory" in str(caught.value)
    assert "No module named 'goaicore.no_such_module'" in str(caught.value)


def test_sdk_sessions_are_kept_apart_by_database_and_session_id(tmp_path: Path) -> None:
    one, two = tmp_path / "one.db", tmp_path / "two.db"
    assert sdk_conversation_id("session_1", one) == sdk_conversation_id("session_1", str(one))
    assert sdk_conversation_id("session_1", one) != sdk_conversation_id("session_2", one)
    assert sdk_conversation_id("session_1", one) != sdk_conversation_id("session_1", two)
    assert sdk_conversation_id("s", one) != sdk_conversation_id("s", one, messages_table="other")
    assert sdk_conversation_id("s") != sdk_conversation_id("s")  # ":memory:": its own each time
    for odd in ("x" * 300, " ", "", "Robert'); DROP TABLE students;--"):
        assert check_conversation_id(sdk_conversation_id(odd, one)) is not None
    assert sdk_conversation_id("x" * 300, one) != sdk_conversation_id("x" * 301, one)


def test_a_goaicore_sdk_session_keeps_the_session_id_it_was_given(tmp_path: Path) -> None:
    session = goaicore_memory_session("session_1", tmp_path / "a.db", session_settings={"limit": 2})
    try:
        assert session.session_id == "session_1"
        assert session.conversation_id == sdk_conversation_id("session_1", tmp_path / "a.db")
        assert session.session_settings == SessionSettings(limit=2)
    finally:
        session.close()
    with pytest.raises(TypeError, match="Unknown session settings: limitt"):
        goaicore_memory_session("s", session_settings={"limitt": 1})
    with pytest.raises(TypeError):
        goaicore_memory_session("s", tmp_path / "a.db", no_such_option=True)  # type: ignore[call-arg]
