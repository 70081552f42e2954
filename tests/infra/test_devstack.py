"""``goaicore dev``: starts the stack, proves it, writes dev.json, stops what it started."""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import psutil
import psycopg
import pytest
from kafka import KafkaAdminClient

from goaicore.broker import EmbeddedBroker, ensure_topics
from goaicore.config import Settings
from goaicore.database import EmbeddedPostgres
from goaicore.devstack import LocalStack
from goaicore.net import free_loopback_port, port_open

# The stack and its demo take about 6 s here; a machine starved of CPU can make
# the embedded profile's short group sessions rebalance, so allow much more.
STACK_UP_TIMEOUT = 240


def _clean_env(data_dir: Path, **extra: str) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if k
        not in {
            "KAFKA_BOOTSTRAP_SERVERS",
            "DATABASE_URL",
            "GOAICORE_BROKER_PROFILE",
            "GOAICORE_TOPIC_PREFIX",
            "GOAICORE_PARTITIONS",
            "OPENAI_API_KEY",
            "OPENAI_BASE_URL",
            "ANTHROPIC_API_KEY",
            "GOAICORE_MODEL",
            "GOAICORE_TOOLS",
        }
    }
    env.update({"GOAICORE_DATA_DIR": str(data_dir), "COLUMNS": "200"}, **extra)
    return env


def _read_until(process: subprocess.Popen[str], marker: str, timeout: float) -> str:
    assert process.stdout is not None
    seen = ""
    deadline = time.monotonic() + timeout
    while marker not in seen:
        remaining = deadline - time.monotonic()
        if remaining <= 0 or process.poll() is not None:
            raise AssertionError(f"no {marker!r} in output (exit {process.poll()}):\n{seen}")
        # Read the descriptor itself: a buffered readline() could pull the rest of
        # the output into Python's buffer, where select() would never see it.
        ready, _, _ = select.select([process.stdout.fileno()], [], [], remaining)
        if ready:
            chunk = os.read(process.stdout.fileno(), 65536)
            if not chunk:
                time.sleep(0.05)  # end of output: the poll above reports the exit
            seen += chunk.decode(errors="replace")
    return seen


def _stop(process: subprocess.Popen[str]) -> None:
    """After a failure: SIGTERM first so the stack stops its own servers, then SIGKILL."""
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def test_dev_runs_until_signalled_then_leaves_nothing(tmp_path: Path) -> None:
    process = subprocess.Popen(
        [sys.executable, "-m", "goaicore", "dev"],
        env=_clean_env(tmp_path),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        output = _read_until(process, "Ctrl-C to stop", timeout=STACK_UP_TIMEOUT)
        assert "record through the broker" in output
        assert "row through PostgreSQL" in output
        info = json.loads((tmp_path / "dev.json").read_text())
        assert info["pid"] == process.pid
        assert info["broker_embedded"] is True
        assert info["broker_profile"] == "embedded"
        assert info["bootstrap_servers"] in output
        children = psutil.Process(process.pid).children(recursive=True)
        assert info["broker_pid"] in {c.pid for c in children}
        assert info["worker_pid"] in {c.pid for c in children}
        assert info["projector_pid"] in {c.pid for c in children}
        assert "event folded by the store worker" in output
        assert "event projected to PostgreSQL" in output

        # Other commands find the stack through dev.json.
        found = Settings(env={"GOAICORE_DATA_DIR": str(tmp_path)})
        assert found.bootstrap_servers == info["bootstrap_servers"]
        assert found.embedded_broker
        assert found.database_url == info["database_url"]
        admin = KafkaAdminClient(bootstrap_servers=info["bootstrap_servers"])
        assert {"goaicore.events", "goaicore.snapshots"} <= set(admin.list_topics())
        admin.close()
        # The scripted game session ran through the worker's HTTP API, offline model.
        assert "model: offline model" in output
        assert "[offline] score_lookup returned" in output
        assert "Royal Pump Room" in output
        roles: list[str] = []
        for _ in range(100):  # the last turn is folded shortly after its reply
            url = f"{info['http_url']}/conversations/demo-player"
            with urllib.request.urlopen(url) as answer:
                roles = [m["role"] for m in json.loads(answer.read())["messages"]]
            if roles.count("tool") == 2:
                break
            time.sleep(0.1)
        assert roles.count("tool") == 2
        assert roles.count("user") == 3
        with psycopg.connect(info["database_url"]) as conn:
            assert conn.execute("SELECT count(*) FROM goaicore_stack_check").fetchone()

        # A second stack on the same data dir is refused in one line.
        second = subprocess.run(
            [sys.executable, "-m", "goaicore", "dev", "--check-only"],
            env=_clean_env(tmp_path),
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert second.returncode == 2
        assert "a dev stack is already running" in second.stderr
        assert second.stderr.count("\n") == 1

        process.send_signal(signal.SIGINT)
        assert process.wait(timeout=60) == 0
    finally:
        _stop(process)
    _, alive = psutil.wait_procs(children, timeout=10)
    assert alive == [], f"left running: {alive}"
    assert not (tmp_path / "dev.json").exists()
    host, port = info["bootstrap_servers"].split(":")
    assert not port_open(host, int(port))
    db_host, db_port = info["database_url"].split("@")[1].split("/")[0].split(":")
    if info["database_source"] == "embedded":
        assert not port_open(db_host, int(db_port))


def test_stack_adopts_a_server_orphaned_on_its_data_dir(tmp_path: Path) -> None:
    orphan = EmbeddedPostgres(tmp_path / "postgres").start()  # as if its stack was killed
    nobody = ("127.0.0.1", free_loopback_port())
    stack = LocalStack(Settings(env={}, data_dir=tmp_path), local_postgres=nobody)
    info = stack.start()
    try:
        assert info.database_source == "embedded"
        assert f"127.0.0.1:{orphan.port}/goaicore" in info.database_url
        assert stack.check().row_id > 0
    finally:
        stack.stop()
    assert not port_open("127.0.0.1", orphan.port)
    assert not (tmp_path / "dev.json").exists()


def test_sigterm_stops_it_too(tmp_path: Path, postgres_url: str) -> None:
    process = subprocess.Popen(
        [sys.executable, "-m", "goaicore", "dev"],
        env=_clean_env(tmp_path, DATABASE_URL=postgres_url),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        output = _read_until(process, "Ctrl-C to stop", timeout=STACK_UP_TIMEOUT)
        assert "(DATABASE_URL)" in output
        children = psutil.Process(process.pid).children(recursive=True)
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=60) == 0
    finally:
        _stop(process)
    _, alive = psutil.wait_procs(children, timeout=10)
    assert alive == []


def test_wrong_partition_count_stops_with_one_line(tmp_path: Path) -> None:
    with EmbeddedBroker() as broker:
        existing = Settings(
            env={},
            bootstrap_servers=broker.bootstrap_servers,
            broker_profile="embedded",
            partitions=2,
            data_dir=tmp_path,
        )
        ensure_topics(existing)
        result = subprocess.run(
            [sys.executable, "-m", "goaicore", "dev", "--check-only"],
            env=_clean_env(
                tmp_path,
                KAFKA_BOOTSTRAP_SERVERS=broker.bootstrap_servers,
                GOAICORE_BROKER_PROFILE="embedded",
                GOAICORE_PARTITIONS="4",
            ),
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert result.returncode == 2
    assert result.stderr.startswith("goaicore: topic goaicore.events has 2 partitions")
    assert result.stderr.count("\n") == 1
    assert not (tmp_path / "dev.json").exists()


@pytest.mark.parametrize("variable", ["GOAICORE_PARTITIONS", "KAFKA_BOOTSTRAP_SERVERS"])
def test_bad_variable_stops_before_starting_anything(tmp_path: Path, variable: str) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "goaicore", "dev"],
        env=_clean_env(tmp_path, **{variable: "nonsense"}),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2
    assert result.stderr.startswith(f"goaicore: {variable}='nonsense'")
    assert result.stderr.count("\n") == 1
    assert list(tmp_path.iterdir()) == []
