"""The import graph: goaicore never imports the services, and no module imports itself back.

Every import counts, at module level or inside a function, typing-only or not:
a cycle through a lazy import is still a knot a reader has to untie.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SERVICES = ROOT / "services"
SERVICE_PACKAGES = tuple(sorted(p.name for p in SERVICES.iterdir() if (p / "__init__.py").exists()))


def _modules() -> dict[str, Path]:
    """Dotted name -> file, for goaicore and every service package."""
    found: dict[str, Path] = {}
    roots = [(ROOT, ROOT / "goaicore")] + [(SERVICES, SERVICES / p) for p in SERVICE_PACKAGES]
    for base, package in roots:
        for path in package.rglob("*.py"):
            parts = list(path.relative_to(base).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


def _imports(name: str, path: Path, modules: dict[str, Path]) -> Iterator[str]:
    """The modules ``name`` imports: a submodule when one is named, else its package."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                yield sub if sub in modules else base


def _with_packages(target: str) -> Iterator[str]:
    """``target`` and the packages importing it runs first (``a.b.c`` runs ``a.b``).

    The top-level package (``goaicore``, a service's package) is left out: it is the
    facade that is already running when its own modules import each other.
    """
    parts = target.split(".")
    for depth in range(2, len(parts) + 1):
        yield ".".join(parts[:depth])


def _graph() -> dict[str, set[str]]:
    """Module -> the modules of goaicore and the services it imports (packages included)."""
    modules = _modules()
    return {
        name: {
            module
            for target in _imports(name, path, modules)
            for module in _with_packages(target)
            if module in modules and module != name and not name.startswith(module + ".")
        }
        for name, path in modules.items()
    }


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_the_services_are_packages_with_names_of_their_own() -> None:
    assert SERVICE_PACKAGES == ("goaicore_console", "goaicore_projector", "goaicore_store")
    assert not (SERVICES / "__init__.py").exists()  # services/ is a folder, not a package


def test_no_service_imports_another() -> None:
    """What two services share lives in goaicore (the console's tokens are the API's)."""
    modules = _modules()
    offending = [
        f"{name} imports {target}"
        for name, path in modules.items()
        if name.split(".")[0] in SERVICE_PACKAGES
        for target in _imports(name, path, modules)
        if target.split(".")[0] in SERVICE_PACKAGES and target.split(".")[0] != name.split(".")[0]
    ]
    assert offending == []


def test_goaicore_never_imports_a_service() -> None:
    modules = _modules()
    offending = [
        f"{name} imports {target}"
        for name, path in modules.items()
        if name.startswith("goaicore.") or name == "goaicore"
        for target in _imports(name, path, modules)
        if target.split(".")[0] in (*SERVICE_PACKAGES, "services")
    ]
    assert offending == []


def test_the_settings_import_nothing_of_goaicore_but_its_errors() -> None:
    """Every layer reads its settings, so the settings sit under every layer."""
    modules = _modules()
    offending = [
        f"{name} imports {target}"
        for name, path in modules.items()
        if name == "goaicore.settings" or name.startswith("goaicore.settings.")
        for target in _imports(name, path, modules)
        if target.split(".")[0] == "goaicore"
        and target != "goaicore.errors"
        and target != "goaicore.settings"
        and not target.startswith("goaicore.settings.")
    ]
    assert offending == []
    assert "goaicore.settings.kafka" in modules  # the package is where this test looks


def test_no_module_imports_the_services_folder() -> None:
    modules = _modules()
    imported = {t for name, path in modules.items() for t in _imports(name, path, modules)}
    assert not any(t == "services" or t.startswith("services.") for t in imported)


def test_no_import_cycles() -> None:
    assert _cycles(_graph()) == []


def test_the_cycle_finder_finds_cycles() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert _cycles(graph) == [["a", "b", "c"]]


# What an interface may not import: the broker's and the database's clients, and
# goaicore's own layers under the store port. It reaches them through the port.
BELOW_THE_PORT = (
    "kafka",
    "aiokafka",
    "confluent_kafka",
    "psycopg",
    "goaicore.kafka",
    "goaicore.clients",
    "goaicore.replay",
    "goaicore.sealing",
    "goaicore.projection",
    "goaicore.fold",
)
HTTP_ROUTES = (
    "goaicore_store.http.routes",
    "goaicore_store.http.history_routes",
    "goaicore_store.http.bodies",
    "goaicore_store.http.errors",
    "goaicore_store.http.operations",
    "goaicore_store.http.auth",
)


# The commands that read and write conversations: asking, publishing, the history, the
# history operations.
CONVERSATION_COMMANDS = (
    "goaicore.cli.chat",
    "goaicore.cli.events",
    "goaicore.cli.history_ops",
    "goaicore.cli.store",
)


@pytest.mark.parametrize("interface", [HTTP_ROUTES, CONVERSATION_COMMANDS])
def test_interfaces_reach_the_broker_only_through_the_store_port(
    interface: tuple[str, ...],
) -> None:
    assert _reaching_below(interface, BELOW_THE_PORT) == []


# Below the projection's query port: the database's client and the SQL.
BELOW_THE_QUERY_PORT = (
    "psycopg",
    "goaicore.projection.db",
    "goaicore.projection.postgres",
    "goaicore.projection.migrations",
    "goaicore.projection.writer",
    "kafka",
    "aiokafka",
    "goaicore.kafka",
    "goaicore.clients",
)
# Where the console opens its projection; every other module of it asks the port.
CONSOLE_WIRING = ("goaicore_console.database", "goaicore_console.main")


def test_the_console_and_the_audit_commands_reach_the_database_only_through_the_port() -> None:
    modules = _modules()
    askers = [
        name
        for name in modules
        if name.startswith("goaicore_console") and name not in CONSOLE_WIRING
    ] + ["goaicore.cli.audit"]
    assert _reaching_below(askers, BELOW_THE_QUERY_PORT) == []


# The auditor's commands over the log (replay, verify, tail): the log is what they
# audit, so they read it, but through the auditor's library (goaicore.replay), never
# a Kafka client or the fold of their own.
LOG_AUDIT_COMMANDS = ("goaicore.cli.replay", "goaicore.cli.tail")
BELOW_THE_AUDITOR = (
    "kafka",
    "aiokafka",
    "confluent_kafka",
    "goaicore.kafka",
    "goaicore.clients",
    "goaicore.fold",
    "goaicore.sealing",
)


def test_the_log_audit_commands_read_the_log_only_through_the_auditors_library() -> None:
    assert _reaching_below(LOG_AUDIT_COMMANDS, BELOW_THE_AUDITOR) == []


def _reaching_below(names: Iterable[str], below: tuple[str, ...]) -> list[str]:
    """Each import of the modules ``names`` that reaches a module under ``below``."""
    modules = _modules()
    return [
        f"{name} imports {target}"
        for name in names
        for target in _imports(name, modules[name], modules)
        if any(target == under or target.startswith(under + ".") for under in below)
    ]
