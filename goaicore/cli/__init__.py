"""The ``goaicore`` command line: one module per command group.

Each command module exposes ``register(subparsers)``; it adds its parser and
sets ``handler`` to a function taking the parsed arguments and returning an
exit code.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from types import ModuleType

from goaicore.cli import audit, bench, chat, dev, events, services, store, tail, topics
from goaicore.config import ConfigError

# Errors a user fixes by changing configuration or environment: one line, exit 2.
USER_ERRORS: tuple[type[Exception], ...] = (ConfigError,)

COMMAND_MODULES: tuple[ModuleType, ...] = (
    dev,
    topics,
    services,
    store,
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


def _stack_errors() -> tuple[type[Exception], ...]:
    from goaicore.kafka import BrokerStartError, TopicMismatchError
    from goaicore.kafka.apache import KafkaUnavailable
    from goaicore.kafka.connection import BrokerUnreachableError, MissingTopicError
    from goaicore.kafka.security import KafkaSecurityError
    from goaicore.kafka.topics import TopicsNotReadyError
    from goaicore.projection.db import (
        DatabaseUnreachableError,
        ForeignProjectionError,
        PositionConflictError,
        ProjectionMissingError,
    )
    from goaicore.projection.postgres import PostgresStartError
    from goaicore.records.validation import InvalidInputError

    return (
        BrokerStartError,
        KafkaUnavailable,
        KafkaSecurityError,
        TopicMismatchError,
        TopicsNotReadyError,
        PostgresStartError,
        InvalidInputError,
        MissingTopicError,
        ProjectionMissingError,
        ForeignProjectionError,
        PositionConflictError,
        BrokerUnreachableError,
        DatabaseUnreachableError,
    )


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
