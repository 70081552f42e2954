"""The local Apache Kafka launcher: jars fetched once, clear errors, a node that keeps its data."""

from __future__ import annotations

import stat
from pathlib import Path

import psutil
import pytest
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import KafkaAdminClient, NewTopic

from goaicore.kafka.apache import KAFKA_VERSION, KafkaUnavailable, LocalKafka, kafka_jars
from goaicore.kafka.apache import jars as jars_module
from tests.brokers import TEST_BROKER_CONFIG


def _tool(folder: Path, name: str, script: str) -> None:
    path = folder / name
    path.write_text("#!/bin/sh\n" + script + "\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)


@pytest.fixture
def fake_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty cache and a PATH holding only the tools a test puts there (and sh)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    monkeypatch.setenv("GOAICORE_KAFKA_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("PATH", f"{bin_dir}:/bin:/usr/bin")
    for tool in ("java", "mvn"):  # hide the machine's own
        if (Path("/usr/bin") / tool).exists() or (Path("/bin") / tool).exists():
            _tool(bin_dir, tool, "exit 127")
    return bin_dir


def test_missing_java_is_one_clear_line(fake_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (fake_path / "java").unlink(missing_ok=True)
    monkeypatch.setenv("PATH", str(fake_path))
    reason = jars_module.unavailable_reason()
    assert reason == "no `java` on PATH: Apache Kafka needs Java 17+"


def test_too_old_java_is_one_clear_line(fake_path: Path) -> None:
    _tool(fake_path, "java", """echo 'openjdk version "11.0.22" 2024-01-16' >&2""")
    assert jars_module.unavailable_reason() == (
        "java on PATH is Java 11; Apache Kafka here needs 17+"
    )
    _tool(fake_path, "java", """echo 'java version "1.8.0_401"' >&2""")
    assert "Java 8;" in (jars_module.unavailable_reason() or "")


def test_a_failed_fetch_is_one_clear_line_and_leaves_no_cache(fake_path: Path) -> None:
    _tool(
        fake_path,
        "mvn",
        'echo "[ERROR] Failed to execute goal: Could not resolve dependencies"; exit 1',
    )
    with pytest.raises(KafkaUnavailable) as caught:
        kafka_jars(progress=False)
    message = str(caught.value)
    assert message.startswith(f"Maven could not fetch Apache Kafka {KAFKA_VERSION} (exit 1): ")
    assert "Could not resolve dependencies" in message
    assert "\n" not in message
    assert jars_module.cached_jars() is None


def test_a_slow_fetch_stops_at_its_time_limit(
    fake_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _tool(fake_path, "mvn", "exec sleep 60")
    monkeypatch.setenv("GOAICORE_KAFKA_FETCH_TIMEOUT", "1")
    with pytest.raises(KafkaUnavailable, match=r"took over 1 s; check access to Maven Central"):
        kafka_jars(progress=False)


def test_cached_jars_need_neither_maven_nor_the_network(
    fake_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("GOAICORE_KAFKA_CACHE")
    cached = jars_module.cached_jars()
    if cached is None:
        pytest.skip("no Apache Kafka jars cached on this machine")
    (fake_path / "mvn").unlink(missing_ok=True)  # no mvn at all now
    assert kafka_jars(progress=False) == cached
    assert all(jar.parent.name == "libs" for jar in cached)
    assert any(jar.name == f"kafka_2.13-{KAFKA_VERSION}.jar" for jar in cached)


@pytest.mark.apache_kafka
def test_a_node_restarted_on_its_folder_keeps_its_data_and_ports(tmp_path: Path) -> None:
    folder = tmp_path / "kafka"
    kafka = LocalKafka(folder, overrides=TEST_BROKER_CONFIG).start()
    try:
        bootstrap = kafka.bootstrap_servers
        pid = kafka.nodes[0].pid
        admin = KafkaAdminClient(bootstrap_servers=bootstrap)
        admin.create_topics([NewTopic("kept", 1, 1)])
        admin.close()
        producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all")
        producer.send("kept", b"before the restart").get(30)
        producer.close()
    finally:
        kafka.stop()
    assert pid is not None
    assert not psutil.pid_exists(pid)
    assert "Kafka Server started" in (folder / "node-1" / "kafka.log").read_text()

    again = LocalKafka(folder, overrides=TEST_BROKER_CONFIG).start()
    try:
        assert again.bootstrap_servers == bootstrap
        consumer = KafkaConsumer(bootstrap_servers=bootstrap, consumer_timeout_ms=10_000)
        partition = TopicPartition("kept", 0)
        consumer.assign([partition])
        consumer.seek_to_beginning(partition)
        assert [record.value for record in consumer][:1] == [b"before the restart"]
        consumer.close()
    finally:
        again.stop()
