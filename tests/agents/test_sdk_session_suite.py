"""The OpenAI Agents SDK's own session tests, run against session factories.

``run_sdk_session_suite`` runs the three session test files of the SDK's sdist
(fetched once into the cache) in a pytest of their own, with ``SQLiteSession`` bound
to the factory. The SDK's ``SQLiteSession`` itself must pass every test, those of the
SQLite-only table included; ``MemorySession``, a backend that is not SQLite, must pass
every other one and fail each of the table's (strict xfail). A goaicore session is
one more row of ``FACTORIES``, expecting the table applied.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from goaicore.testing.agents_sdk_suite import (
    FACTORY_ENV,
    MEMORY_REFERENCE,
    SQLITE_ONLY,
    SQLITE_SELF_CHECK,
    run_sdk_session_suite,
)

# openai-agents 0.24.0: 98 tests in the three files; the table's 16 tests are 18 node
# ids (one of them runs for add, pop and clear).
SDK_SESSION_TESTS = 98
SQLITE_ONLY_NODES = 18

FACTORIES = [
    pytest.param(SQLITE_SELF_CHECK, False, id="sqlite-self-check"),
    pytest.param(MEMORY_REFERENCE, True, id="memory-reference"),
]


@pytest.mark.parametrize(("factory", "table_applies"), FACTORIES)
def test_sdk_session_suite(factory: str, table_applies: bool, tmp_path: Path) -> None:
    result = run_sdk_session_suite(factory, junit_path=tmp_path / "junit.xml")
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
