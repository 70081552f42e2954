"""``goaicore worker``, ``goaicore projector`` and ``goaicore console``: the deployable services.

goaicore never imports them: each is found through an entry point of the
``goaicore.services`` group (declared in ``pyproject.toml``), whose object is a
``main(**options) -> int``. Another distribution may provide its own.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from importlib.metadata import entry_points
from typing import Any

from goaicore.cli.args import PORT, POSITIVE, integer
from goaicore.errors import ConfigError
from goaicore.settings.postgres import parse_db_schema

GROUP = "goaicore.services"
# The extra whose packages each service needs, for the message when one is missing.
EXTRAS = {"worker": "worker", "projector": "projector", "console": "console"}


class ServiceUnavailableError(ConfigError):
    """A service is not installed, or a package it needs is missing."""


def load_service(name: str) -> Callable[..., int]:
    """The ``main`` of service ``name``, or a one-line error saying what to install."""
    extra = EXTRAS.get(name, "all")
    found = entry_points(group=GROUP, name=name)
    if not found:
        raise ServiceUnavailableError(
            f"no {name!r} service is installed (entry point group {GROUP!r}); "
            f"install goaicore[{extra}]"
        )
    entry = next(iter(found))
    try:
        main: Callable[..., int] = entry.load()
    except ImportError as exc:  # a package of the service's extra is missing
        missing = exc.name or "a package"
        raise ServiceUnavailableError(
            f"the {name} service needs {missing!r}, which is not installed: "
            f"pip install 'goaicore[{extra}]'"
        ) from None
    return main


def register(subparsers: Any) -> None:
    worker: argparse.ArgumentParser = subparsers.add_parser(
        "worker", help="run the store worker (the fold into snapshots, chat, HTTP)"
    )
    worker.add_argument("--web-port", type=PORT, default=None, help="HTTP port (default: free)")
    worker.add_argument(
        "--web-host",
        default="127.0.0.1",
        help="address HTTP binds to; 0.0.0.0 in a container (default: %(default)s)",
    )
    worker.add_argument(
        "--canonical-url",
        default=None,
        metavar="URL",
        help="URL other workers reach this one at, to forward requests to the owner of a "
        "conversation (default: http://<web host, or this host's name for 0.0.0.0>:<port>)",
    )
    worker.add_argument(
        "--insecure-http",
        action="store_true",
        help="serve the HTTP API without tokens on an address other machines reach "
        "(refused otherwise when GOAICORE_HTTP_TOKENS is unset)",
    )
    worker.add_argument("--loglevel", default="warning", help="default: %(default)s")
    worker.set_defaults(handler=handle_worker)

    projector: argparse.ArgumentParser = subparsers.add_parser(
        "projector",
        help="project the log (events, snapshots, replies, dead letters) into PostgreSQL "
        "(runs until stopped)",
    )
    projector.add_argument(
        "--batch-size",
        type=integer(1, 100_000),
        default=2000,
        metavar="N",
        help="records per transaction",
    )
    projector.add_argument(
        "--http-port",
        type=PORT,
        default=None,
        help="serve /metrics and /health on this port (default: none)",
    )
    projector.add_argument(
        "--http-host",
        default="127.0.0.1",
        help="address the metrics port binds to; 0.0.0.0 in a container (default: %(default)s)",
    )
    # Fault hook for tests: SIGKILL after writing the N-th batch, before its commit.
    projector.add_argument(
        "--crash-after-write-before-commit", type=POSITIVE, metavar="N", help=argparse.SUPPRESS
    )
    projector.set_defaults(handler=handle_projector)

    console: argparse.ArgumentParser = subparsers.add_parser(
        "console", help="serve the auditor's console: browse, replay and verify conversations"
    )
    console.add_argument("--port", type=PORT, default=8470, help="default: %(default)s")
    console.add_argument(
        "--host",
        default="127.0.0.1",
        help="address the console binds to; 0.0.0.0 in a container (default: %(default)s)",
    )
    console.add_argument(
        "--insecure-http",
        action="store_true",
        help="serve the console without tokens on an address other machines reach "
        "(refused otherwise when GOAICORE_HTTP_TOKENS is unset)",
    )
    console.add_argument(
        "--schema",
        type=_schema,
        help="the projection schema to show instead of GOAICORE_DB_SCHEMA's (or the dev "
        "stack's): e.g. one an earlier log's rows stay in",
    )
    console.set_defaults(handler=handle_console)


def handle_worker(args: argparse.Namespace) -> int:
    return load_service("worker")(
        web_port=args.web_port,
        web_host=args.web_host,
        canonical_url=args.canonical_url,
        loglevel=args.loglevel,
        insecure_http=args.insecure_http,
    )


def handle_projector(args: argparse.Namespace) -> int:
    return load_service("projector")(
        batch_size=args.batch_size,
        crash_after_write_before_commit=args.crash_after_write_before_commit,
        http_port=args.http_port,
        http_host=args.http_host,
    )


def _schema(raw: str) -> str:
    try:
        return parse_db_schema("--schema", raw)
    except ConfigError as err:
        raise argparse.ArgumentTypeError(str(err).removeprefix("--schema=")) from None


def handle_console(args: argparse.Namespace) -> int:
    return load_service("console")(
        port=args.port, host=args.host, insecure_http=args.insecure_http, schema=args.schema
    )
