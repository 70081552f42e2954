"""The conformance suite against the store inside the store worker (its HTTP views'
store), run from inside a worker on the broker of record, in the clear and sealing."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from goaicore.config import Settings
from goaicore.kafka import ensure_topics
from goaicore.sealing.keys import MasterKeys
from goaicore.testing.conformance import CHECK_NAMES
from tests.brokers import SessionBroker
from tests.store.workers import worker_env

pytestmark = pytest.mark.integration

RUN_TIMEOUT = 600


@pytest.fixture(scope="module", params=["clear", "sealed"])
def report(
    request: pytest.FixtureRequest,
    kafka_broker: SessionBroker,
    tmp_path_factory: pytest.TempPathFactory,
) -> dict[str, Any]:
    sealed = request.param == "sealed"
    keys = {"master_keys": MasterKeys.generate("k1").to_text()} if sealed else {}
    folder = tmp_path_factory.mktemp(f"worker-conformance-{request.param}")
    settings: Settings = kafka_broker.settings(folder, f"wconf{request.param}", **keys)
    ensure_topics(settings)
    path, log = folder / "report.json", folder / "worker.log"
    env = {k: v for k, v in worker_env(settings).items() if not k.startswith("OPENAI_")}
    with log.open("wb") as out:
        done = subprocess.run(
            [sys.executable, "-m", "tests.conformance.worker_run", str(path)],
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            timeout=RUN_TIMEOUT,
            check=False,
        )
    assert path.exists(), f"no report (exit {done.returncode}):\n{_tail(log)}"
    result: dict[str, Any] = json.loads(path.read_text())
    assert "worker" not in result["failed"], f"{result['failed']['worker']}\n{_tail(log)}"
    return result


@pytest.mark.parametrize("name", CHECK_NAMES)
def test_the_worker_store_keeps_its_promises(report: dict[str, Any], name: str) -> None:
    assert name in report["passed"], report["failed"].get(name, "not run")


def _tail(log: Path) -> str:
    return log.read_text(errors="replace")[-6000:]
