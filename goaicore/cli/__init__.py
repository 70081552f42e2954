"""The ``goaicore`` command line: one module per command group.

Each command module exposes ``register(subparsers)``; it adds its parser and
sets ``handler`` to a function taking the parsed arguments and returning an
exit code.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence
from types import ModuleType

from goaicore.cli import audit, bench, chat, dev, events, replay, services, tail, topics
from goaicore.config import ConfigError
from goaicore.extras import MissingExtraError

# Errors a user fixes by changing configuration or environment: one line, exit 2.
USER_ERRORS: tuple[type[Exception], ...] = (ConfigError, MissingExtraError)

COMMAND_MODULES: tuple[ModuleType, ...] = (
    dev,
    topics,
    services,
    replay,
    events,
    chat,
    tail,
    bench,
    audit,
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="goaicore",
        description="Event-sourced conversation store for LLM chat.",
    )
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for module in COMMAND_MODULES:
        module.register(subparsers)
    return parser


# Errors of the stack (broker, database, input), by module: one line, exit 2.
STACK_ERRORS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("goaicore.kafka", ("BrokerStartError", "TopicMismatchError")),
    ("goaicore.kafka.apache", ("KafkaUnavailable",)),
    ("goaicore.kafka.connection", ("BrokerUnreachableError", "MissingTopicError")),
    ("goaicore.kafka.security", ("KafkaSecurityError",)),
    ("goaicore.kafka.topics", ("TopicsNotReadyError",)),
    (
        "goaicore.projection.db",
        (
            "DatabaseUnreachableError",
            "ForeignProjectionError",
            "PositionConflictError",
            "ProjectionMissingError",
        ),
    ),
    ("goaicore.projection.postgres", ("PostgresStartError",)),
    ("goaicore.records.validation", ("InvalidInputError",)),
)


def _stack_errors() -> tuple[type[Exception], ...]:
    """The stack's error classes; a module whose extra is missing cannot raise its own."""
    found: list[type[Exception]] = []
    for module_name, names in STACK_ERRORS:
        try:
            module = importlib.import_module(module_name)
        except ImportError:
            continue
        found.extend(getattr(module, name) for name in names)
    return tuple(found)


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        code: int = args.handler(args)
    except USER_ERRORS + _stack_errors() as err:
        first_line = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        print(f"goaicore: {first_line}", file=sys.stderr)
        return 2
    return code


if __name__ == "__main__":
    sys.exit(main())
