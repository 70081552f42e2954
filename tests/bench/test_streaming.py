"""The ``stream`` suite on its smallest shape, on the test broker: a check of its report's
shape (every figure beside its baseline), not a benchmark."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from goaicore.bench import runner, streaming
from goaicore.bench.registry import BROKER_SUITES
from tests.brokers import SessionBroker


@pytest.fixture
def tiny_stream(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(streaming, "TOKENS", 5)
    monkeypatch.setattr(streaming, "RATE", 100.0)
    monkeypatch.setattr(streaming, "LEVELS", ((1, 2),))
    # enough turns that the worker's CPU time, counted in 10 ms ticks, moves
    monkeypatch.setattr(streaming, "CPU_SHAPE", (2, 3))
    monkeypatch.setattr(streaming, "CPU_ROUNDS", 1)
    monkeypatch.setattr(streaming, "SETTLE", 0.5)


def test_stream_is_a_broker_suite() -> None:
    runner.load_suites()
    assert BROKER_SUITES["stream"] is streaming.stream


@pytest.mark.usefixtures("tiny_stream")
@pytest.mark.timeout(300)
def test_the_stream_suite_reports_each_figure_beside_its_baseline(
    kafka_broker: SessionBroker, data_dir: Path
) -> None:
    rows = runner.with_ratios(streaming.measure(kafka_broker.settings(data_dir, "s")))

    level = {"conversations": 1}
    names = [m.name for m in rows if m.params == level]
    for kind in (
        streaming.FIRST,
        streaming.LLM_FIRST,
        streaming.ECHO,
        streaming.FLOOR,
        streaming.LAST_DELTA,
        streaming.LAST_SENT,
    ):
        assert f"{kind} p50" in names
        assert f"{kind} p99" in names
    assert "first token overhead of the worker (p50 difference)" in names
    cpu = {m.name: m for m in rows if m.params == {"conversations": 2, "turns": 6}}
    assert set(cpu) == {streaming.CPU_STREAMED, streaming.CPU_PLAIN}
    assert len(rows) == len(names) + len(cpu)

    by_name = {m.name: m for m in rows}
    for m in rows:
        assert m.suite == "stream"
        assert m.unit == "ms"
        assert "5 tokens at 100/s" in m.note  # the shape it ran
        assert math.isfinite(m.value)
        if "difference" not in m.name:  # a difference of two timings may have any sign
            assert m.value > 0, m.name
        if m.baseline is not None:
            assert m.baseline in by_name
            assert m.ratio == pytest.approx(m.value / by_name[m.baseline].value)
    first = by_name[f"{streaming.FIRST} p50"]
    assert first.baseline == f"{streaming.FLOOR} p50"
    assert f"{streaming.LLM_FIRST} p50" in first.also_ratios
    assert by_name[f"{streaming.LAST_DELTA} p99"].baseline == f"{streaming.ECHO} p99"
    assert by_name[f"{streaming.LAST_SENT} p50"].baseline == f"{streaming.ECHO} p50"
    assert cpu[streaming.CPU_STREAMED].baseline == streaming.CPU_PLAIN
