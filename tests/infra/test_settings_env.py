"""The dev stack hands its child processes every setting it resolved, secrets included,
and nothing of the parent's own goaicore variables besides."""

from __future__ import annotations

from dataclasses import fields
from pathlib import Path

import pytest

from goaicore.config import FIELD_VARIABLES, LOADER_VARIABLES, VARIABLES, Settings
from goaicore.devstack.worker_process import settings_env


def _every_variable(tmp_path: Path) -> dict[str, str]:
    """A value other than the default for every documented variable."""
    certificate = tmp_path / "client.pem"
    certificate.write_text("not checked until a TLS connection")
    tokens = tmp_path / "tokens"
    tokens.write_text("token-from-file-0123456789\n")
    return {
        "KAFKA_BOOTSTRAP_SERVERS": "k1:9092,k2:9093",
        "GOAICORE_BROKER_PROFILE": "embedded",
        "GOAICORE_LOCAL_BROKER": "kafka",
        "GOAICORE_TOPIC_PREFIX": "game.prod",
        "GOAICORE_PARTITIONS": "12",
        "GOAICORE_REPLICATION_FACTOR": "3",
        "GOAICORE_MIN_INSYNC_REPLICAS": "2",
        "KAFKA_SECURITY_PROTOCOL": "SASL_PLAINTEXT",
        "KAFKA_SASL_MECHANISM": "SCRAM-SHA-512",
        "KAFKA_SASL_USERNAME": "game",
        "KAFKA_SASL_PASSWORD": "kafka-pass word",
        "KAFKA_SSL_CAFILE": str(certificate),
        "KAFKA_SSL_CERTFILE": str(certificate),
        "KAFKA_SSL_KEYFILE": str(certificate),
        "KAFKA_SSL_KEY_PASSWORD": "key-secret",
        "DATABASE_URL": "postgresql://u:db-secret@db:5432/app",
        "GOAICORE_DB_SCHEMA": "audit_prod",
        "GOAICORE_MAX_RECORD_BYTES": "65536",
        "OPENAI_API_KEY": "sk-secret",
        "OPENAI_BASE_URL": "http://127.0.0.1:8000/v1",
        "GOAICORE_MODEL": "gpt-4o-mini",
        "GOAICORE_OPENAI_API": "responses",
        "ANTHROPIC_API_KEY": "ak-secret",
        "GOAICORE_CHAT_CONCURRENCY": "8",
        "GOAICORE_TOOL_THREADS": "3",
        "GOAICORE_HISTORY_THREADS": "2",
        "GOAICORE_READ_WAIT": "2.5",
        "GOAICORE_TURN_TIMEOUT": "30",
        "GOAICORE_STREAM_HOLD_MS": "20",
        "GOAICORE_SYSTEM_PROMPT": "Be brief, and, above all, kind",
        "GOAICORE_TOOLS": "mygame.tools:registry",
        "GOAICORE_CONTEXT_TOKENS": "4000",
        "GOAICORE_HTTP_TOKENS": "token-one-0123456789abcdef",
        "GOAICORE_HTTP_TOKENS_FILE": str(tokens),
        "GOAICORE_WORKER_SECRET": "worker-secret-0123456789",
        "GOAICORE_PRICES": str(tokens),  # any file: the worker reads it, not Settings
        "GOAICORE_LOG_FORMAT": "json",
        "GOAICORE_TABLE_STORE": "rocksdb",
        "GOAICORE_SNAPSHOT_FLUSH_MS": "250",
        "GOAICORE_SNAPSHOT_FLUSH_BYTES": "65536",
        "GOAICORE_NATIVE": "off",
        "GOAICORE_MASTER_KEYS": "k1:QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVpBQkNERUY=",
        "GOAICORE_ERASURE_WINDOW": "3600",
        "GOAICORE_INTAKE": "off",
        "GOAICORE_DATA_DIR": str(tmp_path / "data"),
        "GOAICORE_SCHEMAS_DIR": str(tmp_path / "schemas"),
        "GOAICORE_KAFKA_CACHE": str(tmp_path / "cache"),
        "GOAICORE_KAFKA_FETCH_TIMEOUT": "99",
    }


def test_every_documented_variable_is_covered() -> None:
    documented = {v.name for v in VARIABLES}
    assert set(FIELD_VARIABLES.values()) == documented - LOADER_VARIABLES - {
        "GOAICORE_HTTP_TOKENS_FILE"  # read into the tokens, which are passed themselves
    }
    settable = {f.name for f in fields(Settings) if f.name != "env"}
    assert set(FIELD_VARIABLES) == settable


def test_a_child_resolves_exactly_the_parents_settings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    variables = _every_variable(tmp_path)
    assert {v.name for v in VARIABLES} <= set(variables)
    for name, value in variables.items():
        monkeypatch.setenv(name, value)
    parent = Settings()
    child_env = settings_env(parent)
    child = Settings(env=child_env)
    for item in fields(Settings):
        if item.name != "env":
            assert getattr(child, item.name) == getattr(parent, item.name), item.name
    assert child.http_tokens == ("token-one-0123456789abcdef", "token-from-file-0123456789")
    for name in LOADER_VARIABLES:  # read where they are used, so passed through as they are
        assert child_env[name] == variables[name]
    assert "GOAICORE_HTTP_TOKENS_FILE" not in child_env


def test_defaults_are_left_to_the_child_and_the_parents_strays_are_dropped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-of-the-parent")
    monkeypatch.setenv("GOAICORE_NOT_A_SETTING", "x")
    settings = Settings(
        env={}, bootstrap_servers="k:9092", broker_profile="standard", data_dir=tmp_path
    )
    env = settings_env(settings)
    goaicore = {k: v for k, v in env.items() if k.startswith(("GOAICORE_", "KAFKA_"))}
    assert goaicore == {
        "KAFKA_BOOTSTRAP_SERVERS": "k:9092",
        "GOAICORE_BROKER_PROFILE": "standard",
        "KAFKA_SECURITY_PROTOCOL": "PLAINTEXT",
        "GOAICORE_TOPIC_PREFIX": "goaicore",
        "GOAICORE_PARTITIONS": "6",
        "GOAICORE_TABLE_STORE": "memory",
        "GOAICORE_DATA_DIR": str(tmp_path),
    }
    assert "OPENAI_API_KEY" not in env  # these settings have no key: the child has none
    assert env["PATH"]
