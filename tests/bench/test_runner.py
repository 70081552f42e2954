"""``goaicore bench``: Kafka suites run on each broker, and every row names its broker."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from rich.console import Console

from goaicore.bench import clients as clients_bench
from goaicore.bench import runner
from goaicore.bench.registry import BROKER_SUITES, SUITES, Measurement
from goaicore.kafka.apache import KafkaUnavailable, prepared_or_reason
from goaicore.kafka.local import broker_slug


@pytest.fixture
def tiny_clients(monkeypatch: pytest.MonkeyPatch) -> None:
    """The clients suite on a few hundred records: a check of its shape, not a benchmark."""
    monkeypatch.setattr(clients_bench, "RECORDS", 200)
    monkeypatch.setattr(clients_bench, "SINGLES", 10)
    monkeypatch.setattr(clients_bench, "HISTORY", 100)
    monkeypatch.setattr(clients_bench, "RUNS", 1)
    monkeypatch.setattr(clients_bench, "BATCH_RUNS", 1)


def _console() -> tuple[Console, io.StringIO]:
    out = io.StringIO()
    return Console(file=out, width=400), out


def test_the_kafka_suites_are_broker_suites() -> None:
    runner.load_suites()
    assert {"store", "chat", "stream", "clients", "projection"} <= set(BROKER_SUITES)
    assert {"records", "compaction", "core", "infra"} <= set(SUITES)
    assert not set(SUITES) & set(BROKER_SUITES)
    assert runner.broker_kinds("both") == ("kafka", "embedded")
    assert runner.broker_kinds("embedded") == ("embedded",)


@pytest.mark.usefixtures("tiny_clients")
def test_every_row_names_its_broker(tmp_path: Path) -> None:
    console, printed = _console()
    path = tmp_path / "bench.json"
    reason = prepared_or_reason()
    rows = runner.run(["clients"], path, console, brokers=runner.broker_kinds("both"))

    expected = [broker_slug("kafka")] if reason is None else []
    expected.append(broker_slug("embedded"))
    assert list(dict.fromkeys(m.broker for m in rows)) == expected
    data = json.loads(path.read_text())
    assert [b["broker"] for b in data["brokers"]] == expected
    assert {m["broker"] for m in data["measurements"]} == set(expected)
    for slug in expected:
        assert slug in printed.getvalue()
        names = [m.name for m in rows if m.broker == slug]
        assert "publish throughput, batched" in names
        assert "aiokafka alone, batched" in names
    if reason is None:
        assert data["skipped"] == []
    else:
        assert data["skipped"] == [{"broker": broker_slug("kafka"), "reason": reason}]
        assert reason in printed.getvalue()
    # Each figure with a baseline is compared with that broker's own baseline.
    compared = [m for m in rows if m.baseline is not None]
    assert compared
    for m in compared:
        base = next(b for b in rows if b.broker == m.broker and b.name == m.baseline)
        assert m.ratio == pytest.approx(m.value / base.value)
        assert f"{m.ratio:.2f}× {m.baseline}" in printed.getvalue()


@pytest.mark.usefixtures("tiny_clients")
def test_kafka_rows_are_skipped_with_the_reason_where_it_cannot_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(runner, "prepared_or_reason", lambda: "no `java` on PATH")
    console, printed = _console()
    path = tmp_path / "bench.json"
    rows = runner.run(["clients"], path, console, brokers=runner.broker_kinds("both"))
    assert {m.broker for m in rows} == {broker_slug("embedded")}
    assert "skipping the Apache Kafka" in printed.getvalue()
    assert "no `java` on PATH" in printed.getvalue()
    data = json.loads(path.read_text())
    assert data["skipped"] == [{"broker": broker_slug("kafka"), "reason": "no `java` on PATH"}]

    with pytest.raises(KafkaUnavailable, match="no `java` on PATH"):
        runner.run(["clients"], path, console, brokers=("kafka",), require_kafka=True)


def test_ratios_pair_figures_of_the_same_broker_and_params() -> None:
    def row(name: str, value: float, broker: str, baseline: str | None = None) -> Measurement:
        return Measurement("s", name, value, "x", {"n": 1}, broker=broker, baseline=baseline)

    rows = runner.with_ratios(
        [
            row("figure", 30.0, "a", baseline="base"),
            row("base", 10.0, "a"),
            row("figure", 30.0, "b", baseline="base"),
            row("base", 60.0, "b"),
            row("orphan", 1.0, "c", baseline="base"),
        ]
    )
    assert [m.ratio for m in rows] == [3.0, None, 0.5, None, None]


def test_a_failing_suite_costs_its_own_rows_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def works() -> list[Measurement]:
        return [Measurement("works", "figure", 1.0, "x")]

    def breaks() -> list[Measurement]:
        raise RuntimeError("the broker went away")

    monkeypatch.setitem(SUITES, "works", works)
    monkeypatch.setitem(SUITES, "breaks", breaks)
    console, printed = _console()
    path = tmp_path / "bench.json"
    with pytest.raises(runner.BenchFailed, match="1 benchmark run"):
        runner.run(["breaks", "works"], path, console, brokers=())
    data = json.loads(path.read_text())
    assert [m["suite"] for m in data["measurements"]] == ["works"]
    assert data["failed"] == [{"run": "breaks", "error": "RuntimeError: the broker went away"}]
    assert "the broker went away" in printed.getvalue()
