"""The ``goaicore`` command line: one module per command group.

Each command module exposes ``register(subparsers)``; it adds its parser and
sets ``handler`` to a function taking the parsed arguments and returning an
exit code.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Sequence
from types import ModuleType

from goaicore import logs
from goaicore.cli import (
    audit,
    bench,
    chat,
    dev,
    events,
    history_ops,
    replay,
    services,
    tail,
    topics,
)
from goaicore.errors import EXIT_OK, GoaicoreError, wrap_client_error

COMMAND_MODULES: tuple[ModuleType, ...] = (
    dev,
    topics,
    services,
    replay,
    events,
    history_ops,
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


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; every error goaicore knows is one line and its exit code.

    Exit codes (see :mod:`goaicore.errors`): 0 success, 1 differences found or a
    failed reply, 2 usage error, 3 configuration error, 4 broker or database
    unreachable. argparse's own usage errors exit 2 as well. A reader that closes
    standard output early (``goaicore history CONV | head -1``) ends the command
    quietly with 0, as other Unix tools do.
    """
    try:
        return _run(argv)
    except BrokenPipeError:
        _discard_stdout()
        return EXIT_OK


def _run(argv: Sequence[str] | None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    as_json = logs.configure_from_environment()
    try:
        code: int = args.handler(args)
        sys.stdout.flush()  # a closed pipe shows here, not at the interpreter's exit
    except BrokenPipeError:
        raise
    except GoaicoreError as err:
        return _stop(err, err.exit_code, as_json)
    except Exception as err:
        wrapped = wrap_client_error(err)
        if wrapped is None:
            raise
        return _stop(wrapped, wrapped.exit_code, as_json)
    return code


def _discard_stdout() -> None:
    """Point standard output at the null device: what is still buffered for the closed
    pipe is dropped instead of failing again when the interpreter flushes it at exit."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
    except OSError:
        return
    try:
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):
        pass
    finally:
        os.close(devnull)


def _stop(err: BaseException, code: int, as_json: bool) -> int:
    """Print the error's first line (a JSON log line with GOAICORE_LOG_FORMAT=json), never a
    traceback, and return ``code``."""
    text = str(err).strip()
    first_line = text.splitlines()[0] if text else type(err).__name__
    if as_json:
        logging.getLogger("goaicore.cli").error(
            first_line, extra={"error": type(err).__name__, "exit_code": code}
        )
    else:
        print(f"goaicore: {first_line}", file=sys.stderr)
    return code


if __name__ == "__main__":
    sys.exit(main())
