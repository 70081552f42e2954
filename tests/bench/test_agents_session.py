"""The ``session`` suite on its smallest shape, on the test broker: a check of its report's
shape (every figure beside its baseline), not a benchmark."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from goaicore.bench import agents_session, runner
from goaicore.bench.registry import BROKER_SUITES
from tests.brokers import SessionBroker


def test_session_is_a_broker_suite() -> None:
    runner.load_suites()
    assert BROKER_SUITES["session"] is agents_session.session


@pytest.mark.timeout(300)
def test_the_session_suite_reports_each_figure_beside_its_baseline(
    kafka_broker: SessionBroker, data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(agents_session, "LEVELS", ((2, 2),))
    monkeypatch.setattr(agents_session, "WARMUP_TURNS", 1)
    rows = runner.with_ratios(agents_session.measure(kafka_broker.settings(data_dir, "a")))

    by_name = {m.name: m for m in rows}
    assert len(by_name) == len(rows) == 2 * 3 * 2  # two calls, three stores, p50 and p99
    for op in ("get_items", "add_items"):
        for p in ("p50", "p99"):
            kafka = by_name[f"{op} kafka {p}"]
            assert kafka.baseline == f"{op} sqlite {p}"
            assert f"{op} memory {p}" in kafka.also_ratios
            assert by_name[f"{op} memory {p}"].baseline == f"{op} sqlite {p}"
            assert by_name[f"{op} sqlite {p}"].baseline is None
    for m in rows:
        assert m.suite == "session"
        assert m.unit == "ms"
        assert m.params == {"sessions": 2, "turns": 2}
        assert math.isfinite(m.value)
        assert m.value > 0, m.name
        if m.baseline is not None:
            assert m.ratio == pytest.approx(m.value / by_name[m.baseline].value)
