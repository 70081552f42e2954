"""Run registered benchmark suites, print a table, write JSON.

Suites that measure through Kafka run once per benchmarked broker, each time on
a fresh one: Apache Kafka (a one-node KRaft broker in a temporary folder,
``standard`` client profile) and the embedded broker (``embedded`` profile).
Every row names its broker, and a figure compared with a baseline is compared
with the one measured in the same run on the same broker.
"""

from __future__ import annotations

import dataclasses
import importlib
import json
import platform
import tempfile
import time
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import Literal

from rich.console import Console
from rich.table import Table

from goaicore.bench.registry import BROKER_SUITES, ONLY_ON, SUITES, BrokerSuiteFn, Measurement
from goaicore.errors import GoaicoreError
from goaicore.kafka.apache import KafkaUnavailable, prepared_or_reason
from goaicore.kafka.local import LocalBroker, broker_name, broker_profile, broker_slug
from goaicore.settings.kafka import LocalBrokerKind

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
    "goaicore.bench.streaming",
    "goaicore.bench.agents_session",
    "goaicore.bench.scale",
    "goaicore.bench.peers",
)

BrokerChoice = Literal["both", "kafka", "embedded"]
BROKER_CHOICES: tuple[BrokerChoice, ...] = ("both", "kafka", "embedded")

# Server settings of the benchmarks' Apache Kafka: no wait for more group members
# before a group's first rebalance (there is one broker and one consumer).
BENCH_KAFKA_CONFIG = {"group.initial.rebalance.delay.ms": "0"}


class BenchFailed(GoaicoreError, RuntimeError):
    """Some benchmark runs failed; the rows of the others were written."""


def broker_kinds(choice: BrokerChoice) -> tuple[LocalBrokerKind, ...]:
    """The brokers a ``--broker`` choice benchmarks, Apache Kafka (the reference) first."""
    if choice == "both":
        return ("kafka", "embedded")
    return (choice,)


def load_suites() -> None:
    for module in SUITE_MODULES:
        importlib.import_module(module)


def run(
    names: Sequence[str],
    json_path: Path,
    console: Console,
    brokers: Sequence[LocalBrokerKind] = ("kafka", "embedded"),
    require_kafka: bool = False,
) -> list[Measurement]:
    """Run the named suites (all when empty) and write every measurement as JSON.

    Broker suites run on each of ``brokers``. Where Apache Kafka cannot run, its
    rows are skipped with the reason printed (and kept in the JSON), unless
    ``require_kafka``, which raises KafkaUnavailable instead. A suite registered for one
    broker only has its runs on the others skipped with its reason, kept in the JSON too.
    A suite that fails
    costs its own rows only: the error is printed and kept in the JSON, the other
    suites run, and :class:`BenchFailed` is raised once everything is written.
    """
    load_suites()
    known = {*SUITES, *BROKER_SUITES}
    unknown = [n for n in names if n not in known]
    if unknown:
        listed = ", ".join(sorted(known))
        raise SystemExit(f"goaicore bench: unknown suite {', '.join(unknown)} (known: {listed})")
    selected = list(names) or sorted(known)
    kinds = list(dict.fromkeys(brokers))
    skipped: dict[str, str] = {}
    if "kafka" in kinds and any(name in BROKER_SUITES for name in selected):
        reason = prepared_or_reason()
        if reason is not None:
            if require_kafka:
                raise KafkaUnavailable(f"cannot benchmark Apache Kafka: {reason}")
            console.print(f"[yellow]skipping the {broker_name('kafka')} rows[/yellow]: {reason}")
            skipped[broker_slug("kafka")] = reason
            kinds.remove("kafka")
    results: list[Measurement] = []
    failed: dict[str, str] = {}
    skipped_runs: list[dict[str, str]] = []  # a suite's run on a broker it does not run on
    for name in selected:
        runs: list[tuple[str, Callable[[], list[Measurement]]]] = []
        if name in SUITES:
            runs.append((name, SUITES[name]))
        for kind in kinds if name in BROKER_SUITES else ():
            fn = BROKER_SUITES[name]
            label = f"{name} on {broker_name(kind)}"
            only, why = ONLY_ON.get(name, (kind, ""))
            if kind != only:
                console.print(f"[yellow]skipping {label}[/yellow]: {why}")
                skipped_runs.append({"broker": broker_slug(kind), "suite": name, "reason": why})
                continue
            runs.append((label, partial(run_on_broker, fn, kind)))
        for label, measure in runs:
            console.print(f"[bold]bench[/bold] {label} ...")
            started = time.perf_counter()
            try:
                rows = measure()
            except Exception as exc:  # one suite's failure must not lose the others' rows
                failed[label] = f"{type(exc).__name__}: {exc}"
                console.print(f"  [red]failed[/red]: {failed[label]}")
                continue
            results.extend(rows)
            console.print(f"  {len(rows)} measurements in {time.perf_counter() - started:.1f} s")
    results = with_ratios(results)
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
                "brokers": [
                    {
                        "broker": broker_slug(kind),
                        "name": broker_name(kind),
                        "client_profile": broker_profile(kind),
                    }
                    for kind in kinds
                ],
                "skipped": [
                    *({"broker": slug, "reason": reason} for slug, reason in skipped.items()),
                    *skipped_runs,
                ],
                "failed": [{"run": label, "error": error} for label, error in failed.items()],
                "measurements": [m.as_dict() for m in results],
            },
            indent=2,
        )
    )
    console.print(f"wrote {json_path}")
    if failed:
        raise BenchFailed(f"{len(failed)} benchmark run(s) failed: {', '.join(failed)}")
    return results


def run_on_broker(fn: BrokerSuiteFn, kind: LocalBrokerKind) -> list[Measurement]:
    """Run one broker suite on a fresh local broker of ``kind``; its rows name it."""
    with tempfile.TemporaryDirectory(prefix="goaicore-bench-") as tmp:
        broker = LocalBroker(
            kind,
            folder=Path(tmp) / "kafka" if kind == "kafka" else None,
            log_path=Path(tmp) / "broker.log",
            overrides=BENCH_KAFKA_CONFIG,
        )
        with broker:
            rows = fn(broker)
    return [dataclasses.replace(m, broker=broker.slug) for m in rows]


def with_ratios(results: Sequence[Measurement]) -> list[Measurement]:
    """Each row with a baseline gets its ratio to that baseline (same suite, broker, params)."""

    def key(m: Measurement, name: str) -> tuple[str, str | None, str, str]:
        return (m.suite, m.broker, name, json.dumps(m.params, sort_keys=True, default=str))

    index = {key(m, m.name): m for m in results}

    def ratio(m: Measurement, name: str) -> float | None:
        base = index.get(key(m, name))
        return m.value / base.value if base is not None and base.value else None

    out = []
    for m in results:
        first = ratio(m, m.baseline) if m.baseline else None
        also = {name: r for name in m.also_versus if (r := ratio(m, name)) is not None}
        out.append(dataclasses.replace(m, ratio=first, also_ratios=also))
    return out


def render_table(results: Sequence[Measurement]) -> Table:
    table = Table(title="goaicore bench")
    columns = ("suite", "broker", "measurement", "params", "value", "unit", "vs baseline", "note")
    for column in columns:
        table.add_column(column, justify="right" if column == "value" else "left")
    for m in results:
        params = ", ".join(f"{k}={v}" for k, v in m.params.items())
        ratios = [(m.ratio, m.baseline)] if m.ratio is not None else []
        ratios += [(r, name) for name, r in m.also_ratios.items()]
        versus = "; ".join(f"{r:.2f}× {name}" for r, name in ratios)
        table.add_row(
            m.suite,
            m.broker or "—",
            m.name,
            params,
            f"{m.value:,.3f}",
            m.unit,
            versus,
            m.note,
        )
    return table
