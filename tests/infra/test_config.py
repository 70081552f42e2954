"""Settings: environment variables, dev.json fallback, one-line errors."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from goaicore.config import LOADER_VARIABLES, VARIABLES, Settings
from goaicore.devstack.stack import ensure_local_master_keys
from goaicore.errors import ConfigError


def test_defaults_without_environment(tmp_path: Path) -> None:
    settings = Settings(env={}, data_dir=tmp_path)
    assert settings.topic_prefix == "goaicore"
    assert settings.partitions == 6
    assert settings.replication_factor == -1
    assert settings.bootstrap_servers is None
    assert settings.database_url is None
    assert settings.broker_profile == "standard"
    assert settings.local_broker == "embedded"
    assert settings.topic("events") == "goaicore.events"
    assert Settings(env={}).data_dir == Path(".goaicore")
    assert settings.tools is None  # the worker offers its own tools
    assert (settings.tool_threads, settings.history_threads) == (16, 4)
    assert (settings.snapshot_flush_ms, settings.snapshot_flush_bytes) == (100, 4 * 1024 * 1024)


MASTER_KEY_TEXT = "QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVpBQkNERUY="  # 32 bytes, base64


def test_every_variable_is_read(tmp_path: Path) -> None:
    tokens_file = tmp_path / "tokens"
    tokens_file.write_text("token-three-0123456789abcdef\ntoken-one-0123456789abcdef\n\n")
    env = {
        "KAFKA_BOOTSTRAP_SERVERS": "k1:9092, k2:9093",
        "GOAICORE_BROKER_PROFILE": "embedded",
        "GOAICORE_LOCAL_BROKER": "kafka",
        "GOAICORE_TOPIC_PREFIX": "game.prod",
        "GOAICORE_PARTITIONS": "12",
        "GOAICORE_REPLICATION_FACTOR": "3",
        "DATABASE_URL": "postgresql://u@db:5432/app",
        "GOAICORE_DB_SCHEMA": "audit_prod",
        "GOAICORE_MAX_RECORD_BYTES": "65536",
        "OPENAI_API_KEY": "sk-test",
        "OPENAI_BASE_URL": "http://127.0.0.1:8000/v1",
        "GOAICORE_MODEL": "gpt-4o-mini",
        "GOAICORE_OPENAI_API": "responses",
        "ANTHROPIC_API_KEY": "ak-test",
        "GOAICORE_DATA_DIR": "/tmp/goaicore-data",
        "GOAICORE_CHAT_CONCURRENCY": "8",
        "GOAICORE_TOOL_THREADS": "3",
        "GOAICORE_HISTORY_THREADS": "2",
        "GOAICORE_READ_WAIT": "2.5",
        "GOAICORE_TURN_TIMEOUT": "30",
        "GOAICORE_STREAM_HOLD_MS": "20",
        "GOAICORE_SYSTEM_PROMPT": "Be brief",
        "GOAICORE_TOOLS": "mygame.tools:registry",
        "GOAICORE_CONTEXT_TOKENS": "4000",
        "GOAICORE_TABLE_STORE": "rocksdb",
        "GOAICORE_SNAPSHOT_FLUSH_MS": "250",
        "GOAICORE_SNAPSHOT_FLUSH_BYTES": "65536",
        "KAFKA_SECURITY_PROTOCOL": "SASL_SSL",
        "KAFKA_SASL_MECHANISM": "SCRAM-SHA-512",
        "KAFKA_SASL_USERNAME": "game",
        "KAFKA_SASL_PASSWORD": "s3cret",
        "KAFKA_SSL_CAFILE": __file__,
        "KAFKA_SSL_CERTFILE": __file__,
        "KAFKA_SSL_KEYFILE": __file__,
        "KAFKA_SSL_KEY_PASSWORD": "k3y",
        "GOAICORE_HTTP_TOKENS": " token-one-0123456789abcdef ,token-two-0123456789abcdef",
        "GOAICORE_HTTP_TOKENS_FILE": str(tokens_file),
        "GOAICORE_WORKER_SECRET": " worker-secret-0123456789 ",
        "GOAICORE_PRICES": str(tokens_file),  # read by the worker, not here
        "GOAICORE_LOG_FORMAT": "json",
        "GOAICORE_MIN_INSYNC_REPLICAS": "2",
        "GOAICORE_NATIVE": "off",
        "GOAICORE_MASTER_KEYS": f"k2:{MASTER_KEY_TEXT}, k1:{MASTER_KEY_TEXT}",
        "GOAICORE_ERASURE_WINDOW": "3600",
        "GOAICORE_INTAKE": "off",
    }
    s = Settings(env=env)
    assert s.bootstrap_servers == "k1:9092,k2:9093"
    assert s.embedded_broker
    assert s.local_broker == "kafka"
    assert (s.topic_prefix, s.partitions, s.replication_factor) == ("game.prod", 12, 3)
    assert s.database_url == "postgresql://u@db:5432/app"
    assert s.db_schema == "audit_prod"
    assert s.max_record_bytes == 65536
    assert (s.openai_api_key, s.openai_base_url) == ("sk-test", "http://127.0.0.1:8000/v1")
    assert (s.model, s.anthropic_api_key) == ("gpt-4o-mini", "ak-test")
    assert s.openai_api == "responses"
    assert s.data_dir == Path("/tmp/goaicore-data")
    assert (s.chat_concurrency, s.read_wait, s.turn_timeout) == (8, 2.5, 30.0)
    assert (s.tool_threads, s.history_threads) == (3, 2)
    assert s.stream_hold_ms == 20
    assert (s.system_prompt, s.tools) == ("Be brief", "mygame.tools:registry")
    assert s.context_tokens == 4000
    assert s.table_store == "rocksdb"
    assert (s.snapshot_flush_ms, s.snapshot_flush_bytes) == (250, 65536)
    assert (s.security_protocol, s.sasl_mechanism) == ("SASL_SSL", "SCRAM-SHA-512")
    assert (s.sasl_username, s.sasl_password) == ("game", "s3cret")
    assert s.ssl_cafile == s.ssl_certfile == s.ssl_keyfile == __file__
    assert s.ssl_key_password == "k3y"
    assert s.http_tokens == (
        "token-one-0123456789abcdef",
        "token-two-0123456789abcdef",
        "token-three-0123456789abcdef",
    )
    assert "token-" not in repr(s)
    assert s.worker_secret == "worker-secret-0123456789"
    assert "worker-secret" not in repr(s)
    assert s.prices == tokens_file
    assert s.log_format == "json"
    assert s.native == "off"
    assert s.min_insync_replicas == 2
    assert s.master_keys == env["GOAICORE_MASTER_KEYS"]
    assert s.erasure_window == 3600.0
    assert s.intake is False  # set off, although master keys are set
    assert MASTER_KEY_TEXT not in repr(s)
    assert {v.name for v in VARIABLES} - LOADER_VARIABLES == set(env)


def test_bad_master_keys_are_refused_at_once_without_showing_them() -> None:
    with pytest.raises(ConfigError, match="master key 1") as caught:
        Settings(env={"GOAICORE_MASTER_KEYS": "k1:not-base64-at-all!"})
    assert "not-base64" not in str(caught.value)
    with pytest.raises(ConfigError, match="32 bytes"):
        Settings(env={"GOAICORE_MASTER_KEYS": "k1:c2hvcnQ="})
    assert Settings(env={"GOAICORE_MASTER_KEYS": " "}).master_keys is None


def test_publishers_write_to_intake_where_workers_seal_unless_told_otherwise() -> None:
    keys = {"GOAICORE_MASTER_KEYS": f"k1:{MASTER_KEY_TEXT}"}
    assert Settings(env={}).intake is False
    assert Settings(env=keys).intake is True
    assert Settings(env={"GOAICORE_INTAKE": "ON"}).intake is True  # a publisher holds no key
    assert Settings(env={**keys, "GOAICORE_INTAKE": "false"}).intake is False
    child = Settings(env=keys).environment()
    assert Settings(env=child).intake is True
    assert Settings(env={}).with_overrides(master_keys=keys["GOAICORE_MASTER_KEYS"]).intake
    told = Settings(env={**keys, "GOAICORE_INTAKE": "off"})
    assert Settings(env=told.environment()).intake is False
    assert told.with_overrides(master_keys=None).intake is False


@pytest.mark.parametrize(
    ("name", "value", "expected"),
    [
        ("GOAICORE_INTAKE", "sometimes", "must be on or off"),
        ("GOAICORE_PARTITIONS", "many", "must be a whole number"),
        ("GOAICORE_PARTITIONS", "0", "must be from 1 to 10000"),
        ("GOAICORE_REPLICATION_FACTOR", "0", "must be -1 or from 1 to 32"),
        ("GOAICORE_MIN_INSYNC_REPLICAS", "0", "must be from 1 to 32"),
        ("GOAICORE_MIN_INSYNC_REPLICAS", "most", "must be a whole number"),
        ("GOAICORE_NATIVE", "on", "must be 'auto' or 'off'"),
        ("KAFKA_BOOTSTRAP_SERVERS", "localhost", "expected host:port"),
        ("KAFKA_BOOTSTRAP_SERVERS", "a:1,b:99999", "expected host:port"),
        ("DATABASE_URL", "mysql://x/y", "must start with postgresql://"),
        ("OPENAI_BASE_URL", "ftp://x", "must be an http:// or https:// URL"),
        ("GOAICORE_TOPIC_PREFIX", "bad prefix!", "Kafka topic names"),
        ("GOAICORE_BROKER_PROFILE", "fast", "must be 'standard' or 'embedded'"),
        ("GOAICORE_LOCAL_BROKER", "redpanda", "must be 'embedded' or 'kafka'"),
        ("GOAICORE_TABLE_STORE", "rocksdict", "must be 'memory' or 'rocksdb'"),
        ("GOAICORE_SNAPSHOT_FLUSH_MS", "0.5", "must be a whole number"),
        ("GOAICORE_SNAPSHOT_FLUSH_MS", "-1", "must be from 0 to 60000"),
        ("GOAICORE_SNAPSHOT_FLUSH_BYTES", "4MB", "must be a whole number"),
        ("GOAICORE_SNAPSHOT_FLUSH_BYTES", "2147483648", "must be from 0 to 1073741824"),
        ("GOAICORE_DB_SCHEMA", "Audit-1", "use 1 to 63 of a-z 0-9 _"),
        ("GOAICORE_CHAT_CONCURRENCY", "0", "must be from 1 to 10000"),
        ("GOAICORE_TOOL_THREADS", "0", "must be from 1 to 1024"),
        ("GOAICORE_HISTORY_THREADS", "many", "must be a whole number"),
        ("GOAICORE_HISTORY_THREADS", "1025", "must be from 1 to 1024"),
        ("GOAICORE_READ_WAIT", "soon", "must be a number of seconds"),
        ("GOAICORE_TOOLS", "mygame.tools", "expected package.module:attribute"),
    ],
)
def test_bad_value_names_the_variable_in_one_line(name: str, value: str, expected: str) -> None:
    with pytest.raises(ConfigError) as caught:
        Settings(env={name: value})
    message = str(caught.value)
    assert message.startswith(f"{name}=")
    assert expected in message
    assert "\n" not in message


def test_min_insync_replicas_follows_the_replication_factor_unless_set() -> None:
    assert Settings(env={}).min_insync_replicas is None
    assert Settings(env={"GOAICORE_MIN_INSYNC_REPLICAS": "auto"}).min_insync_replicas is None
    five = {"GOAICORE_REPLICATION_FACTOR": "5", "GOAICORE_MIN_INSYNC_REPLICAS": "3"}
    assert Settings(env=five).min_insync_replicas == 3
    assert Settings(env=Settings(env=five).environment()).min_insync_replicas == 3
    with pytest.raises(ConfigError) as caught:
        Settings(env={**five, "GOAICORE_REPLICATION_FACTOR": "2"})
    assert str(caught.value) == (
        "GOAICORE_MIN_INSYNC_REPLICAS=3 is more than GOAICORE_REPLICATION_FACTOR=2: "
        "no write would ever be acknowledged"
    )


def test_data_dir_that_is_a_file_is_an_error(tmp_path: Path) -> None:
    file = tmp_path / "file"
    file.write_text("x")
    with pytest.raises(ConfigError, match=r"GOAICORE_DATA_DIR=.*not a directory"):
        Settings(env={"GOAICORE_DATA_DIR": str(file)})


def _write_dev_file(data_dir: Path, pid: int) -> None:
    (data_dir / "dev.json").write_text(
        json.dumps(
            {
                "pid": pid,
                "bootstrap_servers": "127.0.0.1:1111",
                "broker_profile": "embedded",
                "database_url": "postgresql://postgres@127.0.0.1:2222/goaicore",
            }
        )
    )


def test_dev_file_of_a_live_stack_fills_what_the_environment_leaves_out(tmp_path: Path) -> None:
    _write_dev_file(tmp_path, os.getpid())
    s = Settings(env={"GOAICORE_DATA_DIR": str(tmp_path)})
    assert s.bootstrap_servers == "127.0.0.1:1111"
    assert s.embedded_broker
    assert s.database_url == "postgresql://postgres@127.0.0.1:2222/goaicore"


def test_environment_wins_over_dev_file(tmp_path: Path) -> None:
    _write_dev_file(tmp_path, os.getpid())
    s = Settings(env={"GOAICORE_DATA_DIR": str(tmp_path), "KAFKA_BOOTSTRAP_SERVERS": "k:9092"})
    assert s.bootstrap_servers == "k:9092"
    assert not s.embedded_broker  # the dev stack's profile goes with its broker only
    assert s.database_url == "postgresql://postgres@127.0.0.1:2222/goaicore"
    assert Settings(env={}, data_dir=tmp_path, partitions=2).partitions == 2


def test_a_stack_exported_as_its_banner_says_is_the_stack_found_in_dev_file(
    tmp_path: Path,
) -> None:
    """Exporting the broker and database dev.json names gives the same settings as finding
    them there: the stack's master keys (else its sealed content reads as unreadable), its
    broker profile and its projection schema."""
    _write_dev_file(tmp_path, os.getpid())
    info = json.loads((tmp_path / "dev.json").read_text())
    (tmp_path / "dev.json").write_text(json.dumps({**info, "db_schema": "public_log_1234abcd"}))
    keys = ensure_local_master_keys(tmp_path)
    found = Settings(env={"GOAICORE_DATA_DIR": str(tmp_path)})
    exported = Settings(
        env={
            "GOAICORE_DATA_DIR": str(tmp_path),
            "KAFKA_BOOTSTRAP_SERVERS": "127.0.0.1:1111",
            "DATABASE_URL": "postgresql://postgres@127.0.0.1:2222/goaicore",
        }
    )
    assert found.master_keys == keys
    assert exported.master_keys == keys
    assert exported.embedded_broker
    assert exported.db_schema == found.db_schema == "public_log_1234abcd"
    assert exported == found
    # Another broker or database is not the stack's: nothing of the stack goes with it.
    elsewhere = Settings(
        env={
            "GOAICORE_DATA_DIR": str(tmp_path),
            "KAFKA_BOOTSTRAP_SERVERS": "127.0.0.1:3333",
            "DATABASE_URL": "postgresql://postgres@127.0.0.1:4444/goaicore",
        }
    )
    assert elsewhere.master_keys is None
    assert not elsewhere.embedded_broker
    assert elsewhere.db_schema == "public"


def test_dev_file_of_a_dead_stack_is_ignored(tmp_path: Path) -> None:
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    _write_dev_file(tmp_path, dead.pid)
    s = Settings(env={}, data_dir=tmp_path)
    assert s.bootstrap_servers is None
    with pytest.raises(ConfigError, match="KAFKA_BOOTSTRAP_SERVERS is not set"):
        s.require_bootstrap()


def test_cli_stops_with_one_line_on_a_bad_variable(tmp_path: Path) -> None:
    env = {**os.environ, "GOAICORE_PARTITIONS": "-3", "GOAICORE_DATA_DIR": str(tmp_path)}
    result = subprocess.run(
        [sys.executable, "-m", "goaicore.cli", "dev", "--check-only"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 3  # a configuration error
    assert result.stderr == "goaicore: GOAICORE_PARTITIONS='-3': must be from 1 to 10000\n"
    assert not (tmp_path / "dev.json").exists()


def test_a_command_deep_inside_a_checkout_finds_the_stack_at_its_root(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = tmp_path / ".goaicore"
    data.mkdir()
    _write_dev_file(data, os.getpid())
    nested = tmp_path / "services" / "game" / "src"
    nested.mkdir(parents=True)
    monkeypatch.chdir(nested)
    s = Settings(env={})
    assert s.data_dir == data
    assert s.bootstrap_servers == "127.0.0.1:1111"
    assert s.database_url == "postgresql://postgres@127.0.0.1:2222/goaicore"


def test_no_stack_found_says_where_it_looked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigError) as raised:
        Settings(env={}).require_bootstrap()
    assert f"looked for {tmp_path / '.goaicore' / 'dev.json'}" in str(raised.value)
    (tmp_path / ".goaicore").mkdir()
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    _write_dev_file(tmp_path / ".goaicore", dead.pid)
    with pytest.raises(ConfigError, match=r"the dev stack of .*dev.json is not running"):
        Settings(env={}).require_database_url()


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({"GOAICORE_HTTP_TOKENS": "tiny-secret"}, "shorter than 16 characters"),
        ({"GOAICORE_HTTP_TOKENS": "with a space 0123456789"}, "spaces or control characters"),
        ({"GOAICORE_HTTP_TOKENS_FILE": "/nonexistent/tokens"}, "cannot read it"),
    ],
)
def test_bad_http_tokens_are_refused_without_showing_them(
    env: dict[str, str], expected: str
) -> None:
    with pytest.raises(ConfigError, match=expected) as caught:
        Settings(env=env)
    assert "tiny-secret" not in str(caught.value)
    assert "0123456789" not in str(caught.value)
