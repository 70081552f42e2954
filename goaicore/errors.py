"""goaicore's errors: one root, and one class per kind of failure a caller handles.

Catch :class:`GoaicoreError` to catch any error goaicore raises on purpose; catch a
kind to handle it. Each class keeps the builtin base its errors had before
(``ValueError``, ``ConnectionError``, ...), so ``except ValueError`` code still works.
``exit_code`` is what the command line exits with when the error stops a command:

- 1: the command ran and its answer is a failure (a failed reply, a conflict);
- 2: a usage error (bad arguments or input);
- 3: a configuration error (a setting, missing topics or tables, a missing extra);
- 4: the broker or the database is unreachable or failing.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import ParamSpec, TypeVar

P = ParamSpec("P")
R = TypeVar("R")

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_CONFIG = 3
EXIT_UNREACHABLE = 4


class GoaicoreError(Exception):
    """The root of goaicore's errors."""

    exit_code = EXIT_FAILED


class ConfigError(GoaicoreError, ValueError):
    """A setting, or the environment it describes, is wrong; the message names which."""

    exit_code = EXIT_CONFIG


class InputError(GoaicoreError, ValueError):
    """A caller's input cannot be used (bad arguments, a record or blob that does not fit)."""

    exit_code = EXIT_USAGE


class BrokerError(GoaicoreError):
    """Kafka did not do what was asked: unreachable, refusing, or timing out."""

    exit_code = EXIT_UNREACHABLE


class DatabaseError(GoaicoreError):
    """PostgreSQL did not do what was asked: unreachable, refusing, or failing a query."""

    exit_code = EXIT_UNREACHABLE


def wrap_client_error(err: BaseException) -> GoaicoreError | None:
    """A kafka-python, aiokafka or psycopg error as a BrokerError or DatabaseError, else None.

    For the edges where a client library's error would otherwise escape: the
    command line, and the clients' public methods (``raise wrapped from err``).
    Only already-imported libraries are looked at, so this never loads one.
    """
    for module in ("kafka.errors", "aiokafka.errors"):  # kafka-python's and aiokafka's
        kafka_errors = sys.modules.get(module)
        if kafka_errors is not None and isinstance(err, kafka_errors.KafkaError):
            return BrokerError(f"Kafka: {type(err).__name__}: {err}")
    psycopg = sys.modules.get("psycopg")
    if psycopg is not None and isinstance(err, psycopg.Error):
        # The first line only: psycopg adds the failing statement and hints below it.
        first = str(err).strip().splitlines()[0] if str(err).strip() else ""
        return DatabaseError(f"PostgreSQL: {type(err).__name__}: {first}")
    return None


@contextmanager
def client_errors() -> Iterator[None]:
    """Raise Kafka clients' and psycopg's errors in this block as BrokerError or DatabaseError.

    The original error is kept as ``__cause__``; every other error passes unchanged.
    """
    try:
        yield
    except GoaicoreError:
        raise
    except Exception as err:
        wrapped = wrap_client_error(err)
        if wrapped is None:
            raise
        raise wrapped from err


def raises_ours(function: Callable[P, R]) -> Callable[P, R]:
    """``function`` with :func:`client_errors` around each call: a public function over a
    client library raises goaicore's errors only."""

    @functools.wraps(function)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        with client_errors():
            return function(*args, **kwargs)

    return wrapper
