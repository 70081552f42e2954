"""Run registered benchmark suites, print a table, write JSON."""

from __future__ import annotations

import importlib
import json
import platform
import time
from collections.abc import Sequence
from pathlib import Path

from rich.console import Console
from rich.table import Table

from goaicore.bench.registry import SUITES, Measurement

# Modules whose import registers suites. A new suite adds its module here.
SUITE_MODULES: tuple[str, ...] = (
    "goaicore.bench.infra",
    "goaicore.bench.records",
    "goaicore.bench.core",
    "goaicore.bench.clients",
    "goaicore.bench.compaction",
    "goaicore.bench.store",
    "goaicore.bench.projection",
    "goaicore.bench.chat",
)


def load_suites() -> None:
    for module in SUITE_MODULES:
        importlib.import_module(module)


def run(names: Sequence[str], json_path: Path, console: Console) -> list[Measurement]:
    """Run the named suites (all when empty) and write every measurement as JSON."""
    load_suites()
    unknown = [n for n in names if n not in SUITES]
    if unknown:
        known = ", ".join(sorted(SUITES))
        raise SystemExit(f"goaicore bench: unknown suite {', '.join(unknown)} (known: {known})")
    selected = list(names) or sorted(SUITES)
    results: list[Measurement] = []
    for name in selected:
        console.print(f"[bold]bench[/bold] {name} ...")
        started = time.perf_counter()
        rows = SUITES[name]()
        results.extend(rows)
        console.print(f"  {len(rows)} measurements in {time.perf_counter() - started:.1f} s")
    console.print(render_table(results))
    json_path.parent.mkdir(parents=True, exist_ok=True)
    json_path.write_text(
        json.dumps(
            {
                "machine": {
                    "python": platform.python_version(),
                    "platform": platform.platform(),
                    "processor": platform.processor() or platform.machine(),
                },
                "measurements": [m.as_dict() for m in results],
            },
            indent=2,
        )
    )
    console.print(f"wrote {json_path}")
    return results


def render_table(results: Sequence[Measurement]) -> Table:
    table = Table(title="goaicore bench")
    for column in ("suite", "measurement", "params", "value", "unit", "note"):
        table.add_column(column, justify="right" if column == "value" else "left")
    for m in results:
        params = ", ".join(f"{k}={v}" for k, v in m.params.items())
        table.add_row(m.suite, m.name, params, f"{m.value:,.3f}", m.unit, m.note)
    return table
