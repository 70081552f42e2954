"""``goaicore dev``: starts the stack, proves it, writes dev.json, stops what it started."""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import stat
import subprocess
import sys
import time
import urllib.request
import uuid
from pathlib import Path

import psutil
import psycopg
import pytest
from kafka import KafkaAdminClient

from goaicore.clients import EventPublisher, HistoryReader
from goaicore.config import Settings
from goaicore.devstack.stack import PROJECTED_LOG_TABLE, LocalStack
from goaicore.kafka import EmbeddedBroker, ensure_topics
from goaicore.kafka.apache import KAFKA_VERSION, unavailable_reason
from goaicore.net import free_loopback_port, port_open
from goaicore.projection.postgres import EmbeddedPostgres
from goaicore.stopping import Stopping, StopRequested
from goaicore.testing import OpenAIServer
from tests.chat_agent.helpers import ScriptedLLM
from tests.cli import run_goaicore

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
            "GOAICORE_LOCAL_BROKER",
            "GOAICORE_DB_SCHEMA",
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
        # dev.json appears only once the stack is ready: the projector's tables hold the
        # check event by then, and the file is its owner's only (it holds the database URL).
        dev_file = tmp_path / "dev.json"
        deadline = time.monotonic() + STACK_UP_TIMEOUT
        while not dev_file.exists():
            assert process.poll() is None
            assert time.monotonic() < deadline
            time.sleep(0.05)
        assert stat.S_IMODE(dev_file.stat().st_mode) == 0o600
        ready = json.loads(dev_file.read_text())
        with psycopg.connect(ready["database_url"]) as conn:
            row = conn.execute(
                f'SELECT count(*) FROM "{ready["db_schema"]}".conversation_events'
                " WHERE conversation_id = 'stack-check'"
            ).fetchone()
        assert row is not None
        assert row[0] >= 1
        assert not (tmp_path / "dev.tmp").exists()
        output = _read_until(process, "Ctrl-C to stop", timeout=STACK_UP_TIMEOUT)
        assert "record through the broker" in output
        assert "row through PostgreSQL" in output
        assert output.index("conversation shown by the console") < output.index("ready: wrote")
        info = json.loads((tmp_path / "dev.json").read_text())
        assert info["pid"] == process.pid
        # How another shell reaches this same stack, master keys included, none printed.
        assert f"export GOAICORE_DATA_DIR={tmp_path.resolve()}" in output
        assert f"export GOAICORE_DB_SCHEMA={info['db_schema']}" in output
        keys_file = (tmp_path / "master-keys").resolve()
        assert f'export GOAICORE_MASTER_KEYS="$(cat {keys_file})"' in output
        assert keys_file.read_text().strip() not in output
        assert info["broker_embedded"] is True
        assert info["broker_kind"] == "embedded"
        assert info["broker"].startswith("embedded tansu broker")
        assert info["broker"].endswith("(memory only)")
        assert info["broker"] in output
        assert info["broker_data_dir"] is None
        assert info["broker_profile"] == "embedded"
        assert info["bootstrap_servers"] in output
        children = psutil.Process(process.pid).children(recursive=True)
        assert info["broker_pid"] in {c.pid for c in children}
        assert info["worker_pid"] in {c.pid for c in children}
        assert info["projector_pid"] in {c.pid for c in children}
        # Both serve their metrics; the projector its health on a port of its own.
        with urllib.request.urlopen(f"{info['projector_url']}/health") as answer:
            assert json.loads(answer.read())["status"] == "ok"
        with urllib.request.urlopen(f"{info['projector_url']}/metrics") as answer:
            assert b"goaicore_projector_rows_total" in answer.read()
        with urllib.request.urlopen(f"{info['http_url']}/metrics") as answer:
            assert b"goaicore_events_folded_total" in answer.read()
        assert "event folded by the store worker" in output
        assert "event projected to PostgreSQL" in output
        # The console runs too, shows the demo conversation, and the banner names it.
        assert info["console_pid"] in {c.pid for c in children}
        assert info["console_url"] in output
        assert "conversation shown by the console" in output
        listed = b""
        for _ in range(100):  # the demo's events are projected shortly after its replies
            with urllib.request.urlopen(f"{info['console_url']}/conversations") as answer:
                listed = answer.read()
            if b"demo-player" in listed:
                break
            time.sleep(0.2)
        assert b"demo-player" in listed

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
        assert "streamed in" in output  # the last reply came as Server-Sent Events
        roles: list[str] = []
        for _ in range(100):  # the last turn is folded shortly after its reply
            url = f"{info['http_url']}/v1/conversations/demo-player"
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
        assert second.returncode == 3
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


def _descendants(pid: int) -> list[psutil.Process]:
    return psutil.Process(pid).children(recursive=True)


def _names(processes: list[psutil.Process]) -> set[str]:
    """Their names; one gone meanwhile (a short-lived ``java -version``) has none."""
    names = set()
    for child in processes:
        with contextlib.suppress(psutil.NoSuchProcess):
            names.add(child.name())
    return names


def _wait_worker_log(process: subprocess.Popen[str], data_dir: Path) -> None:
    """Until the stack's worker log appears: the worker is being started."""
    deadline = time.monotonic() + STACK_UP_TIMEOUT
    while not (data_dir / "worker.log").exists():
        assert process.poll() is None, f"exit {process.poll()} before the worker started"
        assert time.monotonic() < deadline, "no worker started"
        time.sleep(0.002)


def test_sigterm_while_starting_and_sigkill_after_leave_nothing_running(
    tmp_path: Path, postgres_url: str
) -> None:
    env = _clean_env(
        tmp_path, DATABASE_URL=postgres_url, GOAICORE_DB_SCHEMA=f"dev_kill_{uuid.uuid4().hex[:8]}"
    )
    starting = _start_dev(env)
    try:
        # Its worker has started, the checks have not passed: the stack is starting.
        _wait_worker_log(starting, tmp_path)
        children = _descendants(starting.pid)
        assert children
        starting.send_signal(signal.SIGTERM)
        # It stops its children first: on a loaded machine that takes a while.
        assert starting.wait(timeout=180) == 0
        assert starting.stdout is not None
        said = starting.stdout.read()
    finally:
        _stop(starting)
    # It stopped where it was, instead of first going through its checks.
    assert "stopped while starting; stopped everything the dev stack started" in said
    assert "record through the broker" not in said
    _, alive = psutil.wait_procs(children, timeout=10)
    assert alive == [], f"left running: {alive}"
    assert not (tmp_path / "dev.json").exists()

    # SIGKILLed once ready, the stack leaves its broker, worker, projector and console
    # nothing to run for: each ends with it.
    env["GOAICORE_DB_SCHEMA"] = f"dev_kill_{uuid.uuid4().hex[:8]}"  # another log's schema
    killed = _start_dev(env)
    try:
        _read_until(killed, "Ctrl-C to stop", timeout=STACK_UP_TIMEOUT)
        info = json.loads((tmp_path / "dev.json").read_text())
        children = _descendants(killed.pid)
        pids = {c.pid for c in children}
        for name in ("broker_pid", "worker_pid", "projector_pid", "console_pid"):
            assert info[name] in pids, name
        killed.kill()
        killed.wait(timeout=30)
    finally:
        _stop(killed)
    _, alive = psutil.wait_procs(children, timeout=60)
    assert alive == [], f"left running: {alive}"
    host, port = info["bootstrap_servers"].split(":")
    assert not port_open(host, int(port))
    # The data dir is free again: a new stack starts on it (a new log: a schema of its own).
    fresh = {**env, "GOAICORE_DB_SCHEMA": f"dev_kill_{uuid.uuid4().hex[:8]}"}
    again = run_goaicore("dev", "--check-only", env=fresh, timeout=STACK_UP_TIMEOUT)
    assert again.returncode == 0, again.stdout[-2000:] + again.stderr


# After the worker's log appears: inside the worker's start, the projector's, the
# console's, the checks and the demo. A handler that raised once landed in a logging
# lock's release inside a finalizer: the stop was swallowed, the lock kept, and the
# check's producer thread then waited on it for good.
SIGNAL_DELAYS = (0.0, 0.003, 0.01, 0.03, 0.1, 0.3, 1.0, 3.0)


def test_a_sigterm_at_any_moment_of_the_start_stops_it(tmp_path: Path, postgres_url: str) -> None:
    for delay in SIGNAL_DELAYS:
        data_dir = tmp_path / f"signalled-after-{delay}"
        env = _clean_env(
            data_dir, DATABASE_URL=postgres_url, GOAICORE_DB_SCHEMA=f"dev_{uuid.uuid4().hex[:8]}"
        )
        process = _start_dev(env)
        try:
            _wait_worker_log(process, data_dir)
            time.sleep(delay)
            children = _descendants(process.pid)
            process.send_signal(signal.SIGTERM)
            assert process.wait(timeout=120) == 0, f"signalled {delay} s after the worker"
            assert process.stdout is not None
            said = process.stdout.read()
        finally:
            _stop(process)
        assert (
            "stopped while starting; stopped everything the dev stack started" in said
            or "stopped everything the dev stack started" in said
        ), said
        assert "Traceback" not in said, said
        assert "Exception ignored" not in said, said
        _, alive = psutil.wait_procs(children, timeout=10)
        assert alive == [], f"signalled {delay} s after the worker, left running: {alive}"
        assert not (data_dir / "dev.json").exists()


def test_a_stop_asked_for_before_the_start_starts_nothing(tmp_path: Path) -> None:
    stopping = Stopping()
    stopping.request()
    stack = LocalStack(Settings(env={}, data_dir=tmp_path), stopping=stopping)
    with pytest.raises(StopRequested):
        stack.start()
    assert (stack.broker, stack.database, stack.worker) == (None, None, None)
    # It let go of the data dir: another stack starts on it at once.
    with LocalStack(Settings(env={}, data_dir=tmp_path)) as again:
        assert again.check().row_id > 0


def _dev_pid(data_dir: Path, name: str, other_than: int | None = None) -> int:
    """A process's pid in dev.json, once it differs from ``other_than``."""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        pid = json.loads((data_dir / "dev.json").read_text())[name]
        if isinstance(pid, int) and pid != other_than and not _gone(pid):
            return int(pid)
        time.sleep(0.1)
    raise AssertionError(f"dev.json's {name} stayed {other_than}")


def test_a_stopped_process_is_started_again_and_one_that_keeps_stopping_ends_the_stack(
    tmp_path: Path,
) -> None:
    process = _start_dev(_clean_env(tmp_path))
    try:
        _read_until(process, "Ctrl-C to stop", timeout=STACK_UP_TIMEOUT)
        info = json.loads((tmp_path / "dev.json").read_text())
        assert info["database_source"] == "embedded"
        # PostgreSQL killed: started again on its data and port, and the stack says so.
        postmaster = int(
            (tmp_path / "postgres" / "pgdata" / "postmaster.pid").read_text().split()[0]
        )
        os.kill(postmaster, signal.SIGKILL)
        output = _read_until(process, "embedded PostgreSQL stopped; started it again", 120)
        deadline = time.monotonic() + 60
        while True:
            try:
                with psycopg.connect(info["database_url"], connect_timeout=2) as conn:
                    conn.execute("SELECT 1")
                break
            except psycopg.OperationalError:
                assert time.monotonic() < deadline
                time.sleep(0.2)
        # The store worker killed: started again, dev.json names the new one.
        os.kill(info["worker_pid"], signal.SIGKILL)
        output += _read_until(process, "store worker (exit code -9) stopped; started it again", 60)
        worker = _dev_pid(tmp_path, "worker_pid", other_than=info["worker_pid"])
        assert worker in {c.pid for c in _descendants(process.pid)}
        # A console that keeps stopping ends the stack with one line and exit 1.
        console = _dev_pid(tmp_path, "console_pid")
        for _ in range(2):
            os.kill(console, signal.SIGKILL)
            console = _dev_pid(tmp_path, "console_pid", other_than=console)
        children = _descendants(process.pid)
        os.kill(console, signal.SIGKILL)
        assert process.wait(timeout=120) == 1
        assert process.stdout is not None
        output += process.stdout.read()
    finally:
        _stop(process)
    assert "goaicore: the console stopped 3 times in 60 s; see" in output
    _, alive = psutil.wait_procs(children, timeout=30)
    assert alive == [], f"left running: {alive}"
    assert not (tmp_path / "dev.json").exists()


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
    assert result.returncode == 3
    assert result.stderr.startswith("goaicore: topic goaicore.events has 2 partitions")
    assert result.stderr.count("\n") == 1
    assert not (tmp_path / "dev.json").exists()


@pytest.mark.parametrize(
    "variable", ["GOAICORE_PARTITIONS", "KAFKA_BOOTSTRAP_SERVERS", "GOAICORE_LOCAL_BROKER"]
)
def test_bad_variable_stops_before_starting_anything(tmp_path: Path, variable: str) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "goaicore", "dev"],
        env=_clean_env(tmp_path, **{variable: "nonsense"}),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 3
    assert result.stderr.startswith(f"goaicore: {variable}='nonsense'")
    assert result.stderr.count("\n") == 1
    assert list(tmp_path.iterdir()) == []


def _start_dev(env: dict[str, str]) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "goaicore", "dev"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def _apache_kafka_env(tmp_path: Path, postgres_url: str) -> dict[str, str]:
    """The environment of a dev stack on Apache Kafka, in a schema of its own; the test
    is skipped, saying why, where Apache Kafka cannot run (no Java 17, or no jars and no
    mvn to fetch them)."""
    reason = unavailable_reason()
    if reason is not None:
        pytest.skip(reason)
    return _clean_env(
        tmp_path,
        GOAICORE_LOCAL_BROKER="kafka",
        DATABASE_URL=postgres_url,
        GOAICORE_DB_SCHEMA=f"dev_kafka_{uuid.uuid4().hex[:8]}",
    )


def test_a_sigterm_while_apache_kafka_starts_stops_it(tmp_path: Path, postgres_url: str) -> None:
    env = _apache_kafka_env(tmp_path, postgres_url)
    process = _start_dev(env)
    try:
        # A JVM runs (the storage's format or the node): the node does not answer yet, so
        # the stop is taken up in the readiness wait at the latest.
        deadline = time.monotonic() + STACK_UP_TIMEOUT
        while "java" not in _names(_descendants(process.pid)):
            assert process.poll() is None, f"exit {process.poll()} before Apache Kafka started"
            assert time.monotonic() < deadline, "Apache Kafka was not started"
            time.sleep(0.01)
        children = _descendants(process.pid)
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=120) == 0
        assert process.stdout is not None
        said = process.stdout.read()
    finally:
        _stop(process)
    assert "stopped while starting; stopped everything the dev stack started" in said, said
    assert "Traceback" not in said, said
    _, alive = psutil.wait_procs(children, timeout=30)
    assert alive == [], f"left running: {alive}"
    assert not (tmp_path / "worker.log").exists()  # it stopped before starting the worker


def test_dev_on_apache_kafka_keeps_its_log_between_runs(tmp_path: Path, postgres_url: str) -> None:
    env = _apache_kafka_env(tmp_path, postgres_url)
    # An earlier embedded run's rows, in a schema of their own, as `make run` leaves them.
    earlier = f"dev_embedded_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute(
            f"CREATE TABLE IF NOT EXISTS {PROJECTED_LOG_TABLE} (projection_schema text PRIMARY "
            "KEY, log_id text NOT NULL, since timestamptz NOT NULL DEFAULT now())"
        )
        conn.execute(
            f"INSERT INTO {PROJECTED_LOG_TABLE} (projection_schema, log_id) VALUES (%s, %s)",
            (earlier, f"embedded:{uuid.uuid4().hex}"),
        )
    folder = (tmp_path / "kafka").resolve()
    process = _start_dev(env)
    try:
        output = _read_until(process, "Ctrl-C to stop", timeout=STACK_UP_TIMEOUT)
        banner = " ".join(output.split())
        assert f"the broker holds a new log ({folder} was new)" in banner
        assert "the embedded broker keeps nothing" not in banner
        assert "event folded by the store worker" in output
        assert "event projected to PostgreSQL" in output
        info = json.loads((tmp_path / "dev.json").read_text())
        assert info["broker_kind"] == "kafka"
        assert info["broker_version"] == KAFKA_VERSION
        assert info["broker"] == f"Apache Kafka {KAFKA_VERSION} (KRaft, data in {folder})"
        assert info["broker_data_dir"] == str(folder)
        assert info["broker_profile"] == "standard"
        assert info["broker_embedded"] is False
        assert f"Apache Kafka {KAFKA_VERSION} (KRaft" in output
        assert "GOAICORE_BROKER_PROFILE=standard" in output
        children = psutil.Process(process.pid).children(recursive=True)
        assert info["broker_pid"] in {c.pid for c in children}

        found = Settings(env={"GOAICORE_DATA_DIR": str(tmp_path)})
        assert found.bootstrap_servers == info["bootstrap_servers"]
        assert not found.embedded_broker
        with EventPublisher(found, source="test") as publisher:
            publisher.game_event("kept-player", "Player kept the theatre ticket", kind="ticket")
        with HistoryReader(found) as reader:
            first_run = [e.event_id for e in reader.events("kept-player")]
        assert len(first_run) == 1

        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=90) == 0
    finally:
        _stop(process)
    _, alive = psutil.wait_procs(children, timeout=10)
    assert alive == [], f"left running: {alive}"
    host, port = info["bootstrap_servers"].split(":")
    assert not port_open(host, int(port))
    data = folder / "node-1" / "data"
    assert (data / ".kafka_cleanshutdown").is_file()  # a controlled shutdown
    assert not (tmp_path / "dev.json").exists()

    again = _start_dev(env)
    try:
        output = _read_until(again, "Ctrl-C to stop", timeout=STACK_UP_TIMEOUT)
        assert "event projected to PostgreSQL" in output
        banner = " ".join(output.split())  # rich wraps long lines
        assert f"Apache Kafka {KAFKA_VERSION} kept its log in {folder}: its projection goes on" in (
            banner
        )
        assert "new log" not in banner
        assert earlier in banner
        info = json.loads((tmp_path / "dev.json").read_text())
        assert info["broker"] == f"Apache Kafka {KAFKA_VERSION} (KRaft, data in {folder})"
        found = Settings(env={"GOAICORE_DATA_DIR": str(tmp_path)})
        with HistoryReader(found) as reader:
            assert [e.event_id for e in reader.events("kept-player")] == first_run
        again.send_signal(signal.SIGINT)
        assert again.wait(timeout=90) == 0
    finally:
        _stop(again)
    assert (data / "meta.properties").is_file()  # stopping deletes nothing


_START_AND_LEAVE = """
import sys
from pathlib import Path
from goaicore.kafka.apache import LocalKafka
print(LocalKafka(Path(sys.argv[1])).start().nodes[0].pid)
"""


def _gone(pid: int) -> bool:
    """Exited: no such process, or one whose parent has not reaped it yet."""
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def test_stack_stops_an_apache_kafka_orphaned_on_its_data_dir(
    tmp_path: Path, postgres_url: str
) -> None:
    reason = unavailable_reason()
    if reason is not None:
        pytest.skip(reason)
    # Started by a process that then exits, as a killed stack leaves its broker.
    folder = (tmp_path / "kafka").resolve()
    launcher = subprocess.Popen(
        [sys.executable, "-c", _START_AND_LEAVE, str(folder)], stdout=subprocess.PIPE, text=True
    )
    printed, _ = launcher.communicate(timeout=180)
    assert launcher.returncode == 0
    orphan_pid = int(printed.split()[-1])
    port = json.loads((folder / "cluster.json").read_text())["nodes"][0]["client"]
    try:
        left = {"pid": launcher.pid, "broker_kind": "kafka", "broker_pid": orphan_pid}
        (tmp_path / "dev.json").write_text(json.dumps(left))
        settings = Settings(
            env={},
            data_dir=tmp_path,
            local_broker="kafka",
            database_url=postgres_url,
            db_schema=f"dev_orphan_{uuid.uuid4().hex[:8]}",
        )
        stack = LocalStack(settings)
        info = stack.start()
        try:
            assert info.bootstrap_servers == f"127.0.0.1:{port}"  # its saved ports
            assert info.broker_pid != orphan_pid
            assert _gone(orphan_pid)
            assert stack.check().offset >= 0
        finally:
            stack.stop()
    finally:
        if not _gone(orphan_pid):  # not stopped by the stack: stop it here
            os.killpg(orphan_pid, signal.SIGKILL)
    assert not port_open("127.0.0.1", port)
    assert not (tmp_path / "dev.json").exists()


def test_kafka_without_java_stops_with_one_line(tmp_path: Path) -> None:
    bare = tmp_path / "bin"  # a PATH with nothing on it: no java, no mvn
    bare.mkdir()
    env = _clean_env(tmp_path / "data", GOAICORE_LOCAL_BROKER="kafka", PATH=str(bare))
    result = subprocess.run(
        [sys.executable, "-m", "goaicore", "dev", "--check-only"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 3
    assert result.stderr.startswith("goaicore: GOAICORE_LOCAL_BROKER=kafka, but no `java`")
    assert result.stderr.count("\n") == 1
    assert not (tmp_path / "data" / "dev.json").exists()


def _run_stack_once(data_dir: Path) -> LocalStack:
    """Start a stack on its own embedded broker and PostgreSQL, project one event, stop."""
    nobody = ("127.0.0.1", free_loopback_port())  # never the machine's own PostgreSQL
    stack = LocalStack(
        Settings(env={}, data_dir=data_dir), local_postgres=nobody, schema_given=False
    )
    stack.start()
    try:
        stack.check_projection(stack.check_fold())
    finally:
        stack.stop()
    return stack


def _clear(env: dict[str, str], schema: str, prefix: str) -> subprocess.CompletedProcess[str]:
    return run_goaicore("projection", "clear", "--schema", schema, "--prefix", prefix, env=env)


def _count(url: str, schema: str) -> int:
    with psycopg.connect(url) as conn:
        row = conn.execute(f'SELECT count(*) FROM "{schema}".conversation_events').fetchone()
    assert row is not None
    return int(row[0])


def test_a_restart_keeps_earlier_rows_apart_and_only_an_explicit_clear_removes_them(
    tmp_path: Path,
) -> None:
    first = _run_stack_once(tmp_path)
    second = _run_stack_once(tmp_path)
    assert first.schema_choice is not None
    assert second.schema_choice is not None
    assert first.schema_choice.schema == "public"
    assert second.schema_choice.moved  # the memory-only broker's log is new
    new_schema = second.schema_choice.schema
    assert new_schema.startswith("public_log_")
    assert second.schema_choice.earlier == ("public",)

    third = run_goaicore("dev", "--check-only", env=_clean_env(tmp_path), timeout=300)
    assert third.returncode == 0, third.stdout[-2000:] + third.stderr
    banner = " ".join(third.stdout.split())  # rich wraps long lines
    assert "the broker holds a new log (the embedded broker keeps nothing between runs)" in banner
    assert f"earlier logs' rows stay untouched in schema(s) public, {new_schema}" in banner
    assert "`goaicore console --schema SCHEMA --port PORT` shows one" in banner

    server = EmbeddedPostgres(tmp_path / "postgres").start()
    try:
        url = server.url.rsplit("/", 1)[0] + "/goaicore"
        assert _count(url, "public") == 1  # the first run's check event, still there
        assert _count(url, new_schema) == 1

        env = {**_clean_env(tmp_path), "DATABASE_URL": url}
        refused = _clear(env, "public", "someone-else")
        assert refused.returncode != 0
        assert "nothing was cleared" in refused.stderr
        assert _count(url, "public") == 1

        # The console shows an earlier log's rows, each schema on request.
        for schema in ("public", new_schema):
            _console_lists(env, schema, "stack-check")

        cleared = _clear(env, "public", "goaicore")
        assert cleared.returncode == 0, cleared.stderr
        assert (
            "cleared schema public (topic prefix goaicore): 1 conversation_events" in cleared.stdout
        )
        assert _count(url, "public") == 0
        assert _count(url, new_schema) == 1  # nothing else touched
    finally:
        server.stop()


def _console_lists(env: dict[str, str], schema: str, conversation: str) -> None:
    """Serve ``goaicore console --schema schema`` and find ``conversation`` in its list."""
    port = free_loopback_port()
    console = subprocess.Popen(
        [sys.executable, "-m", "goaicore", "console", "--schema", schema, "--port", str(port)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    try:
        listed = b""
        deadline = time.monotonic() + 60
        while conversation.encode() not in listed:
            assert console.poll() is None, console.communicate()[0].decode(errors="replace")
            assert time.monotonic() < deadline, listed[-2000:]
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/conversations") as answer:
                    listed = answer.read()
            except OSError:
                time.sleep(0.2)
    finally:
        console.terminate()
        console.wait(timeout=30)


def test_every_setting_reaches_the_worker_and_no_secret_reaches_any_log(
    tmp_path: Path, postgres_url: str
) -> None:
    """`make run` hands the worker every variable it was given; known secrets appear in
    no log, no output and no repr (the worker's first log line is its settings)."""
    run = uuid.uuid4().hex[:10]
    secrets = {
        "OPENAI_API_KEY": f"sk-known-openai-{run}",
        "ANTHROPIC_API_KEY": f"ak-known-anthropic-{run}",
        "GOAICORE_HTTP_TOKENS": f"http-known-token-{run}",
        "database password": f"pg-known-{run}",
    }
    # A role with a password, owning a database of its own.
    role = database = f"stack_{run}"
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute(f"CREATE ROLE {role} LOGIN PASSWORD '{secrets['database password']}'")
        conn.execute(f"CREATE DATABASE {database} OWNER {role}")
    host = postgres_url.split("@", 1)[1].rsplit("/", 1)[0]
    database_url = f"postgresql://{role}:{secrets['database password']}@{host}/{database}"
    system_prompt = f"You are the assistant of settings run {run}"
    with OpenAIServer(responder=ScriptedLLM()) as llm:
        env = _clean_env(
            tmp_path,
            DATABASE_URL=database_url,
            GOAICORE_DB_SCHEMA=f"settings_{run}",
            OPENAI_API_KEY=secrets["OPENAI_API_KEY"],
            OPENAI_BASE_URL=llm.base_url,
            ANTHROPIC_API_KEY=secrets["ANTHROPIC_API_KEY"],
            GOAICORE_HTTP_TOKENS=secrets["GOAICORE_HTTP_TOKENS"],
            GOAICORE_MODEL=f"gpt-settings-{run}",
            GOAICORE_SYSTEM_PROMPT=system_prompt,
            GOAICORE_TOPIC_PREFIX=f"s{run}",
            GOAICORE_PARTITIONS="2",
            GOAICORE_CHAT_CONCURRENCY="3",
            GOAICORE_READ_WAIT="7",
            GOAICORE_TURN_TIMEOUT="45",
            GOAICORE_CONTEXT_TOKENS="9000",
            GOAICORE_MAX_RECORD_BYTES="500000",
            GOAICORE_TOOLS="goaicore_store.chat.game_tools:registry",
        )
        try:
            done = run_goaicore("dev", "--check-only", env=env, timeout=STACK_UP_TIMEOUT)
        finally:
            with psycopg.connect(postgres_url, autocommit=True) as conn:
                conn.execute(f"DROP DATABASE IF EXISTS {database} WITH (FORCE)")
                conn.execute(f"DROP ROLE IF EXISTS {role}")
        asked = llm.requests
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-4000:]
    assert "bearer tokens required (1 configured)" in output

    logs = {path: path.read_text(errors="replace") for path in tmp_path.rglob("*.log")}
    worker_log = logs[tmp_path / "worker.log"]
    [seen] = [line for line in worker_log.splitlines() if "goaicore worker: Settings(" in line]
    for shown in (
        f"topic_prefix='s{run}'",
        "partitions=2",
        f"model='gpt-settings-{run}'",
        "chat_concurrency=3",
        "read_wait=7.0",
        "turn_timeout=45.0",
        f"system_prompt='{system_prompt}'",
        "context_tokens=9000",
        "max_record_bytes=500000",
        "tools='goaicore_store.chat.game_tools:registry'",
        f"database_url='postgresql://{role}:***@{host}/{database}'",
    ):
        assert shown in seen, shown
    # The worker used them: its LLM calls carry the key, the model and the prompt.
    assert asked
    for request in asked:
        assert request.headers["authorization"] == f"Bearer {secrets['OPENAI_API_KEY']}"
        assert request.body["model"] == f"gpt-settings-{run}"
        assert request.body["messages"][0] == {"role": "system", "content": system_prompt}
    for name, secret in secrets.items():
        assert secret not in output, name
        for path, text in logs.items():
            assert secret not in text, (name, path)
