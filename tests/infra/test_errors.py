"""One root for goaicore's errors, a kind for each failure, and the CLI's exit codes."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import kafka.errors
import psycopg
import pytest

import goaicore
from goaicore.errors import (
    BrokerError,
    ConfigError,
    DatabaseError,
    GoaicoreError,
    InputError,
    client_errors,
    wrap_client_error,
)

# Raised and caught inside one module to steer control flow; never reach a caller.
INTERNAL = {
    "goaicore.records.avro.generated.NotDirect",
    "goaicore.conversation.state._Reset",
    "goaicore.conversation.turn._Cancelled",  # caught inside the turn: it ends cancelled
    "goaicore.conversation.providers.base._Unreadable",  # raised again as a ProviderError
    "goaicore.testing.agents_runner.AgentTurnsFailure",  # a test's verdict: an AssertionError
}
# Not failures: a stop that was asked for (a signal), a BaseException as KeyboardInterrupt
# is, so that no ``except GoaicoreError`` or ``except Exception`` takes it for one.
CONTROL = {"goaicore.stopping.StopRequested"}


def _goaicore_exceptions() -> dict[str, type[BaseException]]:
    found: dict[str, type[BaseException]] = {}
    for module_info in pkgutil.walk_packages(goaicore.__path__, "goaicore."):
        if module_info.name.endswith(".__main__"):
            continue  # running it is the command line
        module = importlib.import_module(module_info.name)
        for _, value in inspect.getmembers(module, inspect.isclass):
            if issubclass(value, BaseException) and value.__module__ == module.__name__:
                found[f"{value.__module__}.{value.__qualname__}"] = value
    return found


def test_every_error_goaicore_raises_derives_from_the_root() -> None:
    found = _goaicore_exceptions()
    assert len(found) > 30
    strays = sorted(
        name
        for name, cls in found.items()
        if name not in INTERNAL | CONTROL and not issubclass(cls, GoaicoreError)
    )
    assert strays == []


@pytest.mark.parametrize(
    ("name", "kind", "builtin", "exit_code"),
    [
        ("goaicore.config.ConfigError", ConfigError, ValueError, 3),
        ("goaicore.records.validation.InvalidInputError", InputError, ValueError, 2),
        ("goaicore.records.avro.errors.DecodeError", InputError, ValueError, 2),
        ("goaicore.kafka.connection.BrokerUnreachableError", BrokerError, ConnectionError, 4),
        ("goaicore.kafka.connection.MissingTopicError", BrokerError, LookupError, 3),
        ("goaicore.kafka.partition_reader.LogReadTimeout", BrokerError, TimeoutError, 4),
        ("goaicore.projection.db.DatabaseUnreachableError", DatabaseError, ConnectionError, 4),
        ("goaicore.projection.db.ProjectionMissingError", DatabaseError, LookupError, 3),
        ("goaicore.clients.chat_client.ReplyTimeout", GoaicoreError, TimeoutError, 1),
        ("goaicore.conversation.errors.ProviderError", GoaicoreError, Exception, 1),
        ("goaicore.extras.MissingExtraError", ConfigError, ImportError, 3),
    ],
)
def test_each_error_has_its_kind_its_old_builtin_base_and_an_exit_code(
    name: str, kind: type[GoaicoreError], builtin: type[Exception], exit_code: int
) -> None:
    module_name, _, class_name = name.rpartition(".")
    cls = getattr(importlib.import_module(module_name), class_name)
    assert issubclass(cls, kind)
    assert issubclass(cls, builtin)
    assert cls.exit_code == exit_code


def test_the_kinds_are_exported_from_the_package() -> None:
    for kind in (GoaicoreError, ConfigError, InputError, BrokerError, DatabaseError):
        assert getattr(goaicore, kind.__name__) is kind
    assert issubclass(goaicore.ProviderError, GoaicoreError)


def test_client_library_errors_become_broker_and_database_errors() -> None:
    broker = wrap_client_error(kafka.errors.KafkaTimeoutError("Failed to update metadata"))
    assert isinstance(broker, BrokerError)
    assert str(broker) == "Kafka: KafkaTimeoutError: KafkaTimeoutError: Failed to update metadata"
    database = wrap_client_error(psycopg.OperationalError("server closed\nLINE 1: SELECT"))
    assert isinstance(database, DatabaseError)
    assert str(database) == "PostgreSQL: OperationalError: server closed"
    assert wrap_client_error(ValueError("ours to raise")) is None


def test_client_errors_wraps_keeps_the_cause_and_lets_the_rest_through() -> None:
    original = kafka.errors.KafkaConnectionError("refused")
    with pytest.raises(BrokerError) as caught, client_errors():
        raise original
    assert caught.value.__cause__ is original
    with pytest.raises(KeyError), client_errors():
        raise KeyError("not a client library's")
    mine = InputError("already ours")
    with pytest.raises(InputError) as same, client_errors():
        raise mine
    assert same.value is mine


def test_a_projection_query_raises_a_database_error_not_psycopgs(postgres_url: str) -> None:
    from goaicore.projection import conversations

    conn = psycopg.connect(postgres_url)
    conn.close()
    with pytest.raises(DatabaseError, match="PostgreSQL: OperationalError") as caught:
        conversations(conn)
    assert isinstance(caught.value.__cause__, psycopg.OperationalError)
