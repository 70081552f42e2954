"""The OpenAI Agents SDK's own session tests, run against any ``Session``.

The SDK's sdist ships its tests; three of its files hold what a session must do:
``tests/memory/test_session.py``, ``test_session_limit.py`` and
``test_session_persistence_sanitize.py``. They build their sessions with the name
``SQLiteSession``; run as this module's pytest plugin, each test of those files finds
that name bound to a factory instead, every assertion of theirs untouched::

    result = run_sdk_session_suite("mypackage.sessions:make_session")
    print(result.summary())

The factory is a ``module:callable`` in ``GOAICORE_AGENTS_SESSION_FACTORY``, called as
the tests call ``SQLiteSession``: ``factory(session_id, *args, **kwargs)`` with their own
arguments (a ``db_path`` in a fresh temporary folder, ``session_settings=``...), and it
decides what to ignore. Its sessions need the SDK's ``Session`` methods, a sync
``close()`` (the tests call it), ``session_settings`` normalised as the SDK's sessions
do (``coerce_session_settings``) and safe use from other threads and event loops (the
tests run ``Runner.run_sync`` in a thread and write from a thread pool). The tests reuse
session ids (``session_1``...) across tests, each time with a new ``db_path``: a factory
on a shared store must start those sessions empty.

Some tests cannot apply to a backend that is not SQLite: they open the SQLite file, read
SQLiteSession's connections and locks, or write corrupt rows through SQL. They are
listed in :data:`SQLITE_ONLY`, each with why, and marked strict ``xfail`` for every
factory but ``SQLiteSession`` itself (or a subclass), which keeps those internals: with
it they run, and must pass. ``python -m goaicore.testing.agents_sdk_suite`` prints the
table.

Factories of this module: ``sqlite_session`` (the SDK's ``SQLiteSession``, the
self-check), ``goaicore_memory_session`` and ``goaicore_kafka_session`` (a
:class:`~goaicore.integrations.openai_agents.GoaicoreSession` over the in-memory store,
or over Kafka from the environment's settings, with a store worker folding).
"""

from __future__ import annotations

import atexit
import hashlib
import importlib
import importlib.util
import os
import subprocess
import sys
import tempfile
import threading
import uuid
import xml.etree.ElementTree as ElementTree
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from agents import SQLiteSession
from agents.memory import Session, SessionSettings

from goaicore.config import Settings
from goaicore.integrations.openai_agents import SOURCE, GoaicoreSession
from goaicore.records.validation import InvalidInputError, check_conversation_id
from goaicore.store.memory import InMemoryConversationStore
from goaicore.store.port import ConversationStore
from goaicore.sync import run_cleanup

FACTORY_ENV = "GOAICORE_AGENTS_SESSION_FACTORY"
PLUGIN = "goaicore.testing.agents_sdk_suite"  # this module, as `pytest -p` loads it
SESSION_TEST_FILES = (
    "tests/memory/test_session.py",
    "tests/memory/test_session_limit.py",
    "tests/memory/test_session_persistence_sanitize.py",
)
SQLITE_SELF_CHECK = f"{PLUGIN}:sqlite_session"
GOAICORE_MEMORY = f"{PLUGIN}:goaicore_memory_session"
GOAICORE_KAFKA = f"{PLUGIN}:goaicore_kafka_session"

SessionFactory = Callable[..., Session]
"""Called as the SDK's tests call ``SQLiteSession``: ``(session_id, *args, **kwargs)``."""

_SESSION = "tests/memory/test_session.py::"
_CORRUPT_ROW = "writes a corrupt row through SQL (session._locked_connection)"

SQLITE_ONLY: Mapping[str, str] = {
    _SESSION + "test_sqlite_session_close_closes_worker_thread_connections": (
        "reads the SQLite connections of the worker threads (session._connections)"
    ),
    _SESSION + "test_sqlite_session_reaps_connections_from_exited_worker_threads": (
        "counts the SQLite connections of exited worker threads (session._connections)"
    ),
    _SESSION + "test_sqlite_session_closes_retired_connections_before_the_next_allocation": (
        "wraps sqlite3.connect to see retired connections closed (session._connections)"
    ),
    _SESSION + "test_sqlite_session_keeps_connections_of_live_worker_threads": (
        "runs SQL on a live worker thread's connection (session._connections)"
    ),
    _SESSION + "test_sqlite_session_closed_rejects_empty_add_items": (
        "matches the error text 'SQLiteSession is closed', which names the SQLite class"
    ),
    _SESSION + "test_sqlite_session_pop_item_skips_corrupt_most_recent": _CORRUPT_ROW,
    _SESSION
    + "test_sqlite_session_pop_item_returns_none_after_dropping_only_corrupt_rows": _CORRUPT_ROW,
    _SESSION + "test_sqlite_session_get_items_limit_skips_corrupt_newest_rows": _CORRUPT_ROW,
    _SESSION
    + "test_sqlite_session_get_items_session_settings_limit_skips_corrupt_rows": _CORRUPT_ROW,
    _SESSION + "test_sqlite_session_file_lock_is_shared_across_instances": (
        "reads the per-file lock registry (session._lock, SQLiteSession._file_lock_counts)"
    ),
    _SESSION + "test_sqlite_session_failed_add_items_releases_write_lock": (
        "opens the SQLite file at db_path to probe its write lock after a failed write"
    ),
    _SESSION + "test_sqlite_session_failed_clear_session_rolls_back": (
        "drops a table in the SQLite file to fail clear_session, then probes the write lock"
    ),
    _SESSION + "test_sqlite_session_failed_pop_item_releases_write_lock": (
        "drops a table in the SQLite file to fail pop_item, then probes the write lock"
    ),
    _SESSION + "test_sqlite_session_rollback_failure_evicts_connection": (
        "injects a sqlite3.Connection whose rollback fails (session._get_connection)"
    ),
    _SESSION + "test_sqlite_session_close_retries_quarantined_connection": (
        "injects a sqlite3.Connection that fails to roll back and close "
        "(session._quarantined_connections)"
    ),
    _SESSION + "test_sqlite_session_post_commit_cancellation_propagates_after_known_outcome": (
        "pauses a sqlite3.Connection's commit to cancel after it (session._get_connection)"
    ),
}
"""The SDK's tests that cannot apply to a backend that is not SQLite: node id (without
parameters) -> why. Strict xfail for every factory but ``SQLiteSession``."""


def format_xfail_table() -> str:
    """:data:`SQLITE_ONLY` as text, one test and its reason a line."""
    width = max(len(node.removeprefix(_SESSION)) for node in SQLITE_ONLY)
    lines = [
        f"{len(SQLITE_ONLY)} tests of {_SESSION.removesuffix('::')} are strict xfail "
        "for a session that is not SQLiteSession:"
    ]
    lines += [
        f"  {node.removeprefix(_SESSION):<{width}}  {reason}"
        for node, reason in SQLITE_ONLY.items()
    ]
    return "\n".join(lines)


# ---- factories -------------------------------------------------------------------


sqlite_session = SQLiteSession
"""The self-check factory: the SDK's ``SQLiteSession`` itself, with which every test passes."""


def sdk_conversation_id(
    session_id: str,
    db_path: str | Path = ":memory:",
    sessions_table: str = "agent_sessions",
    messages_table: str = "agent_messages",
) -> str:
    """The goaicore conversation a session of the SDK's tests is kept in: one per
    database (``db_path`` and its tables) and session id, as SQLite keeps them.

    The tests reuse session ids (``session_1``...) with a new ``db_path`` each, and open
    two sessions on one ``db_path``: the id names this process's run (a token), the
    database (a hash) and the session. ``":memory:"`` is a database of its own at each
    call, as SQLite's is. A session id that would make no valid conversation id (too
    long, blank) is hashed too.
    """
    if str(db_path) == ":memory:":
        database = f":memory:{uuid.uuid4().hex}"
    else:
        database = os.path.abspath(os.fspath(db_path))
    key = hashlib.sha1(f"{database}\0{sessions_table}\0{messages_table}".encode()).hexdigest()
    prefix = f"sdk-{_RUN}-{key[:8]}"
    try:
        return check_conversation_id(f"{prefix}-{session_id}")
    except InvalidInputError:
        named = hashlib.sha1(repr(session_id).encode()).hexdigest()
        return f"{prefix}-h{named[:16]}"


_RUN = uuid.uuid4().hex[:8]
"""This process's token in the conversation ids its sessions use."""


def _sdk_session(
    store: ConversationStore,
    session_id: str,
    db_path: str | Path,
    sessions_table: str,
    messages_table: str,
    session_settings: SessionSettings | dict[str, Any] | None,
) -> GoaicoreSession:
    return GoaicoreSession(
        session_id,
        store,
        session_settings=session_settings,
        conversation_id=sdk_conversation_id(session_id, db_path, sessions_table, messages_table),
    )


def goaicore_memory_session(
    session_id: str,
    db_path: str | Path = ":memory:",
    sessions_table: str = "agent_sessions",
    messages_table: str = "agent_messages",
    session_settings: SessionSettings | dict[str, Any] | None = None,
) -> GoaicoreSession:
    """A :class:`GoaicoreSession` over this process's in-memory store, called as
    ``SQLiteSession`` is (the same parameters; the database is the conversation id's:
    :func:`sdk_conversation_id`)."""
    store = _shared_store("memory", InMemoryConversationStore)
    return _sdk_session(
        store, session_id, db_path, sessions_table, messages_table, session_settings
    )


def goaicore_kafka_session(
    session_id: str,
    db_path: str | Path = ":memory:",
    sessions_table: str = "agent_sessions",
    messages_table: str = "agent_messages",
    session_settings: SessionSettings | dict[str, Any] | None = None,
) -> GoaicoreSession:
    """A :class:`GoaicoreSession` over Apache Kafka, as :func:`goaicore_memory_session`:
    one ``KafkaConversationStore`` per process, from the environment's settings
    (``run_sdk_session_suite(..., env=settings_env(settings))``); a store worker on
    that deployment must fold its events."""

    def open_kafka() -> ConversationStore:
        from goaicore.store.kafka import KafkaConversationStore

        return KafkaConversationStore(Settings(), source=SOURCE)

    store = _shared_store("kafka", open_kafka)
    return _sdk_session(
        store, session_id, db_path, sessions_table, messages_table, session_settings
    )


_stores: dict[str, ConversationStore] = {}
_stores_lock = threading.Lock()


def _shared_store(kind: str, open_store: Callable[[], ConversationStore]) -> ConversationStore:
    """This process's store of ``kind``, opened on first use and closed as it exits."""
    with _stores_lock:
        store = _stores.get(kind)
        if store is None:
            store = _stores[kind] = open_store()
            atexit.register(lambda: run_cleanup(store.close()))
        return store


def load_factory(spec: str) -> SessionFactory:
    """The callable named by ``module:attribute`` (the attribute may be dotted)."""
    module_name, _, attribute = spec.partition(":")
    if not module_name or not attribute:
        raise ValueError(f"{spec!r}: a session factory is named as 'module:callable'")
    target: Any = importlib.import_module(module_name)
    for part in attribute.split("."):
        target = getattr(target, part)
    if not callable(target):
        raise ValueError(f"{spec!r} is not callable")
    return target  # type: ignore[no-any-return]


def keeps_sqlite_internals(factory: SessionFactory) -> bool:
    """Whether ``factory`` makes SQLiteSessions, whose internals the SQLite-only tests read."""
    return isinstance(factory, type) and issubclass(factory, SQLiteSession)


def _base(node_id: str) -> str:
    """A node id without its parameters."""
    return node_id.split("[", 1)[0]


# ---- the pytest plugin (in the SDK's test process) -------------------------------

_FACTORY = pytest.StashKey[SessionFactory]()
_SPEC = pytest.StashKey[str]()
_MARKED = pytest.StashKey[list[str]]()
_NODE_PROPERTY = "nodeid"
_XFAIL_PROPERTY = "sqlite_only_xfail"


def pytest_configure(config: pytest.Config) -> None:
    spec = os.environ.get(FACTORY_ENV, "").strip()
    if not spec:
        raise pytest.UsageError(
            f"{PLUGIN} needs {FACTORY_ENV}=module:callable, the session factory to test "
            f"(the SDK's own SQLiteSession: {SQLITE_SELF_CHECK})"
        )
    try:
        factory = load_factory(spec)
    except (ImportError, AttributeError, ValueError) as err:
        raise pytest.UsageError(f"{FACTORY_ENV}={spec}: {err}") from None
    config.stash[_FACTORY] = factory
    config.stash[_SPEC] = spec
    config.stash[_MARKED] = []


@pytest.hookimpl(tryfirst=True)  # before -k or -m deselect any: the table is checked whole
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    factory = config.stash[_FACTORY]
    apply_table = not keeps_sqlite_internals(factory)
    seen: set[str] = set()
    for item in items:
        item.user_properties.append((_NODE_PROPERTY, item.nodeid))
        reason = SQLITE_ONLY.get(_base(item.nodeid))
        if reason is None:
            continue
        seen.add(_base(item.nodeid))
        if apply_table:
            item.add_marker(pytest.mark.xfail(reason=f"SQLite only: {reason}", strict=True))
            item.user_properties.append((_XFAIL_PROPERTY, reason))
            config.stash[_MARKED].append(item.nodeid)
    collected = {item.nodeid.split("::", 1)[0] for item in items}
    stale = [node for node in SQLITE_ONLY if node.split("::", 1)[0] in collected]
    stale = [node for node in stale if node not in seen]
    if stale:
        raise pytest.UsageError(
            f"{PLUGIN}.SQLITE_ONLY names tests this SDK does not have: {', '.join(stale)}"
        )


@pytest.fixture(autouse=True)
def _goaicore_session_factory(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    """In the SDK's session test files, ``SQLiteSession`` is the factory under test."""
    if request.node.nodeid.split("::", 1)[0] not in SESSION_TEST_FILES:
        return
    if hasattr(request.module, "SQLiteSession"):
        monkeypatch.setattr(request.module, "SQLiteSession", request.config.stash[_FACTORY])


def pytest_report_header(config: pytest.Config) -> str:
    return f"session factory ({FACTORY_ENV}): {config.stash[_SPEC]}"


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    marked = config.stash[_MARKED]
    spec = config.stash[_SPEC]
    if not marked:
        terminalreporter.write_line(f"session factory {spec}: no test marked SQLite only")
        return
    terminalreporter.write_line(f"session factory {spec}: {len(marked)} tests marked, as")
    terminalreporter.write_line(format_xfail_table())


# ---- running the suite (in our process) -------------------------------------------

OUTCOMES = ("passed", "failed", "error", "xfailed", "xpassed", "skipped")


@dataclass(frozen=True)
class SuiteResult:
    """What the SDK's session tests did with one factory, read from their JUnit XML.

    ``outcomes`` maps each node id to one of :data:`OUTCOMES` (a strict xfail that
    passed is ``xpassed``); ``marked`` lists the node ids the plugin made strict xfail.
    """

    factory: str
    outcomes: Mapping[str, str]
    marked: tuple[str, ...]
    returncode: int
    output: str
    junit_path: Path | None
    """The JUnit XML, when the caller named where to keep it."""

    @property
    def total(self) -> int:
        return len(self.outcomes)

    @property
    def counts(self) -> dict[str, int]:
        """Tests per outcome, every outcome named (zero when none)."""
        found = Counter(self.outcomes.values())
        return {outcome: found[outcome] for outcome in OUTCOMES}

    def nodes(self, outcome: str) -> list[str]:
        """The node ids with ``outcome``, in the order they ran."""
        if outcome not in OUTCOMES:
            raise ValueError(f"{outcome!r} is none of {OUTCOMES}")
        return [node for node, found in self.outcomes.items() if found == outcome]

    def problems(self) -> list[str]:
        """What keeps this run from being a pass: every test not marked passed, every
        marked test xfailed, and pytest's exit status 0. Empty when it is one."""
        marked = set(self.marked)
        found = [
            f"{node}: {outcome}"
            for node, outcome in self.outcomes.items()
            if outcome != ("xfailed" if node in marked else "passed")
        ]
        found += [
            f"{node}: marked but not run" for node in self.marked if node not in self.outcomes
        ]
        if self.returncode != 0:
            found.append(f"pytest exited with {self.returncode}")
        return found

    def summary(self) -> str:
        counts = ", ".join(f"{n} {outcome}" for outcome, n in self.counts.items() if n)
        lines = [f"SDK session suite with {self.factory}: {self.total} tests, {counts or 'none'}"]
        lines += [f"  {problem}" for problem in self.problems()]
        if self.marked:
            lines.append(format_xfail_table())
        return "\n".join(lines)


def run_sdk_session_suite(
    factory: str,
    env: Mapping[str, str] | None = None,
    junit_path: str | Path | None = None,
    *,
    timeout: float = 900.0,
    test_timeout: float = 120.0,
) -> SuiteResult:
    """Run the SDK's session tests with ``factory`` (``module:callable``) in a pytest of
    their own: cwd the SDK's sources (fetched once, see ``agents_sdk_source``), their
    conftest and their pytest configuration, none of ours.

    ``env`` adds to (or overrides) this process's environment; the factory's module must
    be importable there (this package is: its root leads ``PYTHONPATH``, after the
    SDK's root, whose ``tests`` package the tests import). Raises when pytest could not
    run the tests (a usage error, nothing collected, no JUnit XML) with its last lines;
    a run with failures returns them.
    """
    from goaicore.testing.agents_sdk_source import sdk_sources

    root = sdk_sources()
    with tempfile.TemporaryDirectory(prefix="agents-sdk-suite-") as scratch:
        junit = Path(junit_path) if junit_path is not None else Path(scratch) / "junit.xml"
        junit.parent.mkdir(parents=True, exist_ok=True)
        junit.unlink(missing_ok=True)
        command = [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            PLUGIN,
            *SESSION_TEST_FILES,
            "-q",
            "-c",
            str(root / "pyproject.toml"),
            "--rootdir",
            str(root),
            "-p",
            "no:cacheprovider",
            f"--junitxml={junit}",
        ]
        if importlib.util.find_spec("pytest_timeout") is not None:
            command.append(f"--timeout={test_timeout:g}")
        try:
            answer = subprocess.run(
                command,
                cwd=root,
                env=_suite_env(factory, root, env),
                capture_output=True,
                text=True,
                timeout=timeout,
                stdin=subprocess.DEVNULL,
                check=False,
            )
        except subprocess.TimeoutExpired as err:
            raise RuntimeError(
                f"the SDK session suite with {factory} ran over {timeout:.0f} s:\n"
                f"{_tail(_text(err.stdout) + _text(err.stderr))}"
            ) from None
        output = answer.stdout + answer.stderr
        if answer.returncode not in (0, 1) or not junit.is_file():  # 1: tests failed
            raise RuntimeError(
                f"the SDK session suite with {factory} did not run "
                f"(pytest exit {answer.returncode}):\n{_tail(output)}"
            )
        outcomes, marked = _read_junit(junit)
    kept = junit if junit_path is not None else None
    return SuiteResult(factory, outcomes, marked, answer.returncode, output, kept)


def _suite_env(factory: str, root: Path, extra: Mapping[str, str] | None) -> dict[str, str]:
    env = dict(os.environ)
    for name in ("PYTEST_ADDOPTS", "PYTEST_PLUGINS"):  # ours are not theirs
        env.pop(name, None)
    env.update(extra or {})
    env[FACTORY_ENV] = factory
    package_root = str(Path(__file__).resolve().parents[2])
    paths = [str(root), package_root, *filter(None, env.get("PYTHONPATH", "").split(os.pathsep))]
    env["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(paths))
    return env


def _read_junit(path: Path) -> tuple[dict[str, str], tuple[str, ...]]:
    outcomes: dict[str, str] = {}
    marked: list[str] = []
    for case in ElementTree.parse(path).getroot().iter("testcase"):
        properties = {prop.get("name"): prop.get("value", "") for prop in case.iter("property")}
        node = properties.get(_NODE_PROPERTY) or _node_from_names(case)
        outcomes[node] = _outcome(case)
        if _XFAIL_PROPERTY in properties:
            marked.append(node)
    return outcomes, tuple(marked)


def _node_from_names(case: ElementTree.Element) -> str:
    # A case the plugin never saw (a collection error): its class name is its module.
    module = case.get("classname", "")
    name = case.get("name", "")
    return f"{module.replace('.', '/')}.py::{name}" if module else name


def _outcome(case: ElementTree.Element) -> str:
    failure = case.find("failure")
    if failure is not None:
        return "xpassed" if failure.get("message", "").startswith("[XPASS(strict)]") else "failed"
    if case.find("error") is not None:
        return "error"
    skipped = case.find("skipped")
    if skipped is not None:
        return "xfailed" if skipped.get("type") == "pytest.xfail" else "skipped"
    return "passed"


def _text(stream: str | bytes | None) -> str:
    return stream.decode(errors="replace") if isinstance(stream, bytes) else stream or ""


def _tail(output: str, lines: int = 40) -> str:
    return "\n".join(output.splitlines()[-lines:])


if __name__ == "__main__":
    print(format_xfail_table())
