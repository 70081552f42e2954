"""``goaicore bench``: run benchmark suites, print a table, write JSON."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from rich.console import Console


def register(subparsers: Any) -> None:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "bench",
        help="run benchmarks: print a table and write JSON",
        description="Run benchmark suites, print a table and write JSON. Suites that go "
        "through Kafka (store, chat, clients, projection) run on Apache Kafka and on the "
        "embedded broker, each row naming its broker; without Java 17+ and Maven the "
        "Apache Kafka rows are skipped, with the reason. peers (the store worker beside "
        "Kafka Streams and Quix Streams) runs on Apache Kafka only.",
    )
    parser.add_argument("suites", nargs="*", metavar="SUITE", help="suites to run (default: all)")
    parser.add_argument(
        "--json",
        type=Path,
        default=Path("bench-results/bench.json"),
        help="where to write the measurements (default: %(default)s)",
    )
    parser.add_argument(
        "--broker",
        choices=("both", "kafka", "embedded"),
        default="both",
        help="the broker(s) the Kafka suites run on (default: %(default)s); `kafka` fails "
        "where Apache Kafka cannot run, `both` skips it with the reason",
    )
    parser.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    from goaicore.extras import needs

    # The suites run every part: Faust, PostgreSQL, the SDKs and the local servers.
    with needs("all"):
        from goaicore.bench.runner import BenchFailed, broker_kinds, load_suites, run

        load_suites()

    console = Console()
    if not console.is_terminal:
        console = Console(width=200)  # piped or in CI: do not wrap the table
    try:
        run(
            args.suites,
            args.json,
            console,
            brokers=broker_kinds(args.broker),
            require_kafka=args.broker == "kafka",
        )
    except BenchFailed as exc:
        console.print(f"[red]goaicore bench[/red]: {exc}")
        return 1
    return 0
