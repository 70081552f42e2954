"""``goaicore bench``: run benchmark suites, print a table, write JSON."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from rich.console import Console


def register(subparsers: Any) -> None:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "bench", help="run benchmarks: print a table and write JSON"
    )
    parser.add_argument("suites", nargs="*", metavar="SUITE", help="suites to run (default: all)")
    parser.add_argument(
        "--json",
        type=Path,
        default=Path("bench-results/bench.json"),
        help="where to write the measurements (default: %(default)s)",
    )
    parser.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    from goaicore.bench.runner import run

    console = Console()
    if not console.is_terminal:
        console = Console(width=200)  # piped or in CI: do not wrap the table
    run(args.suites, args.json, console)
    return 0
