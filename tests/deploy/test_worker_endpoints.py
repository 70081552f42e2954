"""What the deployment relies on: create-topics, and the worker's health and readiness routes."""

from __future__ import annotations

import socket
import subprocess
import sys
from types import SimpleNamespace
from typing import Any

import pytest

from goaicore.config import Settings
from goaicore.devstack.worker_process import settings_env
from goaicore.kafka.topics import TOPICS
from goaicore.net import free_loopback_port
from goaicore_store.app import default_canonical_url
from goaicore_store.http.auth import HEALTH_PATH, READY_PATH
from goaicore_store.http.routes import readiness
from tests.deploy.processes import WebWorker, get


def goaicore(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "goaicore", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_create_topics_creates_then_finds_them(settings: Settings) -> None:
    env = {**settings_env(settings), "GOAICORE_REPLICATION_FACTOR": "1"}
    first = goaicore(env, "create-topics")
    assert first.returncode == 0, first.stderr
    lines = first.stdout.splitlines()
    assert len(lines) == len(TOPICS)
    assert all(line.startswith("created ") and "partitions=3" in line for line in lines)
    created = f"created {settings.topic('events')} partitions=3 replication=1"
    assert f"{created} min.insync.replicas=1" in lines
    again = goaicore(env, "create-topics")
    assert again.returncode == 0, again.stderr
    assert all(line.startswith("exists ") for line in again.stdout.splitlines())


def test_create_topics_says_when_no_broker_answers(settings: Settings) -> None:
    env = {**settings_env(settings), "KAFKA_BOOTSTRAP_SERVERS": f"127.0.0.1:{free_loopback_port()}"}
    done = goaicore(env, "create-topics", "--timeout", "1", "--wait", "2")
    assert done.returncode == 4  # the broker is unreachable
    assert "retrying" in done.stdout
    [line] = done.stderr.splitlines()
    assert line.startswith("goaicore: no Kafka broker answers at 127.0.0.1:")


class _Recovery:
    def __init__(self, completed: bool) -> None:
        self.completed = SimpleNamespace(is_set=lambda: completed)


def _app(count: int, rebalancing: bool, recovered: bool) -> Any:
    return SimpleNamespace(
        rebalancing_count=count,
        rebalancing=rebalancing,
        tables=SimpleNamespace(recovery=_Recovery(recovered)),
    )


@pytest.mark.parametrize(
    ("count", "rebalancing", "recovered", "reason"),
    [
        (0, False, False, "waiting for the first partition assignment"),
        (1, True, False, "rebalancing"),
        (3, True, True, "rebalancing"),
        (1, False, False, "recovering tables"),
        (1, False, True, None),
    ],
)
def test_readiness_reasons(
    count: int, rebalancing: bool, recovered: bool, reason: str | None
) -> None:
    found = readiness(_app(count, rebalancing, recovered))
    if reason is None:
        assert found is None
    else:
        assert found is not None
        assert found.startswith(reason)


def test_a_wildcard_bind_is_reached_by_host_name() -> None:
    assert default_canonical_url("0.0.0.0", 6066) == f"http://{socket.gethostname()}:6066"
    assert default_canonical_url("10.1.2.3", 7000) == "http://10.1.2.3:7000"


def test_health_answers_and_ready_turns_200_once_partitions_are_assigned(
    settings: Settings,
) -> None:
    worker = WebWorker(settings).start()
    try:
        seen = worker.wait_ready(timeout=120)
        assert seen[-1] == (200, {"status": "ready"}), seen[-5:]
        for status, body in seen[:-1]:
            assert (status, body["status"]) == (503, "not ready")
            assert body["reason"]
        assert get(worker.url + HEALTH_PATH) == (200, {"status": "ok"})
        assert get(worker.url + READY_PATH) == (200, {"status": "ready"})
        assert get(worker.url + "/v1/conversations/nobody")[0] == 404
    finally:
        worker.stop()
