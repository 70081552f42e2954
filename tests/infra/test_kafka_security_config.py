"""Secure-connection settings: parsing, checks, secrets kept out of reprs and errors, and
their translation into each client library's options (no broker needed)."""

from __future__ import annotations

import json
import os
import ssl
import subprocess
import sys
from pathlib import Path

import faust
import pytest
from aiokafka import errors as aiokafka_errors  # type: ignore[import-untyped]

from goaicore import AnthropicProvider, Chat, OpenAIProvider
from goaicore.config import Settings
from goaicore.conversation.providers.choice import Providers
from goaicore.devstack.worker_process import settings_env
from goaicore.errors import ConfigError
from goaicore.kafka.security import (
    aiokafka_options,
    faust_credentials,
    kafka_python_options,
    security_problem,
    ssl_context,
)
from goaicore_store.http import BearerTokens
from tests.kafka_certs import CertificateFiles, make_certificates

PASSWORD = "pa55-word-never-shown"
KEY_PASSWORD = "key-pa55-never-shown"


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> CertificateFiles:
    return make_certificates(tmp_path_factory.mktemp("certs"), KEY_PASSWORD)


def sasl_env(**extra: str) -> dict[str, str]:
    return {
        "KAFKA_SECURITY_PROTOCOL": "SASL_PLAINTEXT",
        "KAFKA_SASL_MECHANISM": "SCRAM-SHA-256",
        "KAFKA_SASL_USERNAME": "alice",
        "KAFKA_SASL_PASSWORD": PASSWORD,
        **extra,
    }


def test_plaintext_by_default(tmp_path: Path) -> None:
    settings = Settings(env={}, data_dir=tmp_path)
    assert settings.security_protocol == "PLAINTEXT"
    assert settings.sasl_mechanism == "PLAIN"
    assert kafka_python_options(settings) == {"security_protocol": "PLAINTEXT"}
    assert aiokafka_options(settings) == {"security_protocol": "PLAINTEXT"}
    assert faust_credentials(settings) is None


def test_names_are_read_in_any_case(tmp_path: Path) -> None:
    env = sasl_env(KAFKA_SECURITY_PROTOCOL="sasl_plaintext", KAFKA_SASL_MECHANISM="scram-sha-512")
    settings = Settings(env=env, data_dir=tmp_path)
    assert (settings.security_protocol, settings.sasl_mechanism) == (
        "SASL_PLAINTEXT",
        "SCRAM-SHA-512",
    )


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        (
            {"KAFKA_SECURITY_PROTOCOL": "TLS"},
            "KAFKA_SECURITY_PROTOCOL='TLS': must be one of PLAINTEXT, SSL, SASL_PLAINTEXT, "
            "SASL_SSL",
        ),
        (
            sasl_env(KAFKA_SASL_MECHANISM="GSSAPI"),
            "KAFKA_SASL_MECHANISM='GSSAPI': must be one of PLAIN, SCRAM-SHA-256, SCRAM-SHA-512",
        ),
        (
            {"KAFKA_SECURITY_PROTOCOL": "SASL_SSL", "KAFKA_SASL_PASSWORD": PASSWORD},
            "KAFKA_SASL_USERNAME is not set: KAFKA_SECURITY_PROTOCOL=SASL_SSL needs "
            "KAFKA_SASL_USERNAME and KAFKA_SASL_PASSWORD",
        ),
        (
            {"KAFKA_SECURITY_PROTOCOL": "SASL_PLAINTEXT", "KAFKA_SASL_USERNAME": "alice"},
            "KAFKA_SASL_PASSWORD is not set: KAFKA_SECURITY_PROTOCOL=SASL_PLAINTEXT needs "
            "KAFKA_SASL_USERNAME and KAFKA_SASL_PASSWORD",
        ),
        (
            {"KAFKA_SASL_USERNAME": "alice", "KAFKA_SASL_PASSWORD": PASSWORD},
            "KAFKA_SASL_USERNAME is set but KAFKA_SECURITY_PROTOCOL is not: "
            "set it to SASL_PLAINTEXT or SASL_SSL",
        ),
        (
            {"KAFKA_SSL_CAFILE": "/etc/hosts"},
            "KAFKA_SSL_CAFILE is set but KAFKA_SECURITY_PROTOCOL is not: set it to SSL",
        ),
        (
            {"KAFKA_SECURITY_PROTOCOL": "SSL", "KAFKA_SSL_CAFILE": "/no/such/ca.pem"},
            "KAFKA_SSL_CAFILE='/no/such/ca.pem': cannot read it (No such file or directory)",
        ),
        (
            {"KAFKA_SECURITY_PROTOCOL": "SSL", "KAFKA_SSL_KEYFILE": "/etc/hosts"},
            "KAFKA_SSL_KEYFILE is set without KAFKA_SSL_CERTFILE",
        ),
        (
            {"KAFKA_SECURITY_PROTOCOL": "SSL", "KAFKA_SSL_KEY_PASSWORD": KEY_PASSWORD},
            "KAFKA_SSL_KEY_PASSWORD is set without KAFKA_SSL_CERTFILE",
        ),
    ],
)
def test_a_bad_setting_is_one_line_naming_the_variable(
    env: dict[str, str], expected: str, tmp_path: Path
) -> None:
    with pytest.raises(ConfigError) as caught:
        Settings(env=env, data_dir=tmp_path)
    message = str(caught.value)
    assert message.startswith(expected)
    assert "\n" not in message
    assert PASSWORD not in message
    assert KEY_PASSWORD not in message


def test_a_certificate_folder_is_not_a_file(tmp_path: Path) -> None:
    env = {"KAFKA_SECURITY_PROTOCOL": "SSL", "KAFKA_SSL_CERTFILE": str(tmp_path)}
    with pytest.raises(ConfigError, match=r"^KAFKA_SSL_CERTFILE=.*: is a directory, not a file$"):
        Settings(env=env, data_dir=tmp_path)


def test_files_that_are_not_pem_are_config_errors_naming_the_variable(
    certs: CertificateFiles, tmp_path: Path
) -> None:
    not_pem = tmp_path / "not.pem"
    not_pem.write_text("not a certificate\n")
    bad_ca = Settings(env={}, data_dir=tmp_path, security_protocol="SSL", ssl_cafile=str(not_pem))
    with pytest.raises(ConfigError, match=r"^KAFKA_SSL_CAFILE='.*not.pem': not a PEM file"):
        kafka_python_options(bad_ca)
    wrong_key_password = Settings(
        env={},
        data_dir=tmp_path,
        security_protocol="SSL",
        ssl_cafile=str(certs.ca),
        ssl_certfile=str(certs.client_cert),
        ssl_keyfile=str(certs.client_key),
        ssl_key_password="not-the-key-password",
    )
    with pytest.raises(ConfigError) as caught:
        aiokafka_options(wrong_key_password)
    message = str(caught.value)
    assert message.startswith("KAFKA_SSL_CERTFILE, KAFKA_SSL_KEYFILE: cannot load")
    assert "KAFKA_SSL_KEY_PASSWORD is wrong" in message
    assert "not-the-key-password" not in message


def test_passwords_stay_out_of_reprs(certs: CertificateFiles, tmp_path: Path) -> None:
    env = {
        **sasl_env(KAFKA_SECURITY_PROTOCOL="SASL_SSL"),
        "KAFKA_SSL_CERTFILE": str(certs.client_cert),
        "KAFKA_SSL_KEYFILE": str(certs.client_key),
        "KAFKA_SSL_KEY_PASSWORD": KEY_PASSWORD,
        "OPENAI_API_KEY": "sk-never-shown",
        "ANTHROPIC_API_KEY": "ak-never-shown",
        "DATABASE_URL": "postgresql://auditor:db-never-shown@db.example:5432/goaicore",
    }
    settings = Settings(env=env, data_dir=tmp_path)
    assert settings.sasl_password == PASSWORD
    assert settings.ssl_key_password == KEY_PASSWORD
    assert settings.database_url is not None
    assert "db-never-shown" in settings.database_url
    for shown in (repr(settings), str(settings), repr(settings.with_overrides(partitions=2))):
        assert "alice" in shown
        assert "postgresql://auditor:***@db.example:5432/goaicore" in shown
        secrets = (PASSWORD, KEY_PASSWORD, "sk-never-shown", "ak-never-shown", "db-never-shown")
        for secret in secrets:
            assert secret not in shown
    assert settings.with_overrides(partitions=2).sasl_password == PASSWORD
    assert PASSWORD not in repr(faust_credentials(settings))


def test_objects_holding_keys_or_tokens_never_show_them(tmp_path: Path) -> None:
    settings = Settings(
        env={"GOAICORE_HTTP_TOKENS": "http-never-shown-0123456789"}, data_dir=tmp_path
    )
    openai = OpenAIProvider(
        "gpt-x", api_key="sk-never-shown", base_url="https://proxy:pw-never-shown@llm/v1"
    )
    anthropic = AnthropicProvider("claude-x", api_key="ak-never-shown")
    shown = [
        repr(settings),
        str(settings),
        repr(openai),
        str(openai),
        repr(anthropic),
        repr(Chat(openai)),
        repr(Providers(settings)),
        repr(BearerTokens(settings.http_tokens)),
    ]
    assert shown[2] == "OpenAIProvider(model='gpt-x', base_url='https://proxy:***@llm/v1')"
    assert shown[4] == "AnthropicProvider(model='claude-x')"
    for text in shown:
        for secret in ("sk-never-shown", "ak-never-shown", "pw-never-shown", "http-never-shown"):
            assert secret not in text


def test_passwords_are_taken_as_given(tmp_path: Path) -> None:
    settings = Settings(env=sasl_env(KAFKA_SASL_PASSWORD=" spaced "), data_dir=tmp_path)
    assert settings.sasl_password == " spaced "


def test_sasl_plaintext_options(tmp_path: Path) -> None:
    settings = Settings(env=sasl_env(), data_dir=tmp_path)
    expected = {
        "security_protocol": "SASL_PLAINTEXT",
        "sasl_mechanism": "SCRAM-SHA-256",
        "sasl_plain_username": "alice",
        "sasl_plain_password": PASSWORD,
    }
    assert kafka_python_options(settings) == expected
    assert aiokafka_options(settings) == expected
    credentials = faust_credentials(settings)
    assert isinstance(credentials, faust.SASLCredentials)
    assert credentials.protocol.value == "SASL_PLAINTEXT"
    assert credentials.mechanism.value == "SCRAM-SHA-256"
    assert (credentials.username, credentials.password) == ("alice", PASSWORD)
    assert credentials.ssl_context is None


def test_ssl_with_a_client_certificate(certs: CertificateFiles, tmp_path: Path) -> None:
    env = {
        "KAFKA_SECURITY_PROTOCOL": "SSL",
        "KAFKA_SSL_CAFILE": str(certs.ca),
        "KAFKA_SSL_CERTFILE": str(certs.client_cert),
        "KAFKA_SSL_KEYFILE": str(certs.client_key),
        "KAFKA_SSL_KEY_PASSWORD": KEY_PASSWORD,
    }
    settings = Settings(env=env, data_dir=tmp_path)
    assert kafka_python_options(settings) == {
        "security_protocol": "SSL",
        "ssl_check_hostname": True,
        "ssl_cafile": str(certs.ca),
        "ssl_certfile": str(certs.client_cert),
        "ssl_keyfile": str(certs.client_key),
        "ssl_password": KEY_PASSWORD,
    }
    context = aiokafka_options(settings)["ssl_context"]
    assert isinstance(context, ssl.SSLContext)
    assert context.check_hostname
    assert context.verify_mode == ssl.CERT_REQUIRED
    assert context is ssl_context(settings)  # built once per set of files
    credentials = faust_credentials(settings)
    assert isinstance(credentials, faust.SSLCredentials)
    assert credentials.context is context


def test_sasl_ssl_options(certs: CertificateFiles, tmp_path: Path) -> None:
    env = sasl_env(KAFKA_SECURITY_PROTOCOL="SASL_SSL", KAFKA_SSL_CAFILE=str(certs.ca))
    settings = Settings(env=env, data_dir=tmp_path)
    options = kafka_python_options(settings)
    assert options["security_protocol"] == "SASL_SSL"
    assert options["ssl_cafile"] == str(certs.ca)
    assert options["sasl_plain_password"] == PASSWORD
    assert "ssl_certfile" not in options
    credentials = faust_credentials(settings)
    assert isinstance(credentials, faust.SASLCredentials)
    assert credentials.protocol.value == "SASL_SSL"
    assert isinstance(credentials.ssl_context, ssl.SSLContext)


def test_child_processes_get_the_security_settings(certs: CertificateFiles, tmp_path: Path) -> None:
    env = sasl_env(KAFKA_SECURITY_PROTOCOL="SASL_SSL", KAFKA_SSL_CAFILE=str(certs.ca))
    settings = Settings(env=env, data_dir=tmp_path, bootstrap_servers="127.0.0.1:9093")
    child = settings_env(settings)
    assert {k: v for k, v in child.items() if k.startswith("KAFKA_")} == {
        "KAFKA_BOOTSTRAP_SERVERS": "127.0.0.1:9093",
        **env,
    }
    again = Settings(env=child)
    fields = ("security_protocol", "sasl_mechanism", "sasl_username", "sasl_password", "ssl_cafile")
    assert [getattr(again, f) for f in fields] == [getattr(settings, f) for f in fields]

    plain = Settings(env={}, data_dir=tmp_path, bootstrap_servers="127.0.0.1:9092")
    child = settings_env(plain)
    assert {k for k in child if k.startswith("KAFKA_")} == {
        "KAFKA_BOOTSTRAP_SERVERS",
        "KAFKA_SECURITY_PROTOCOL",
    }


def _write_dev_file(data_dir: Path, **fields: object) -> None:
    info = {"pid": os.getpid(), "bootstrap_servers": "127.0.0.1:1111", **fields}
    (data_dir / "dev.json").write_text(json.dumps(info))


def test_the_dev_stacks_own_broker_is_plaintext(tmp_path: Path) -> None:
    _write_dev_file(tmp_path, broker_kind="embedded", broker_profile="embedded")
    credentials = {k: v for k, v in sasl_env().items() if k != "KAFKA_SECURITY_PROTOCOL"}
    settings = Settings(env={**credentials, "GOAICORE_DATA_DIR": str(tmp_path)})
    assert settings.bootstrap_servers == "127.0.0.1:1111"
    assert settings.security_protocol == "PLAINTEXT"
    plain = {"KAFKA_SECURITY_PROTOCOL": "plaintext", "GOAICORE_DATA_DIR": str(tmp_path)}
    assert Settings(env=plain).security_protocol == "PLAINTEXT"


@pytest.mark.parametrize("exported", [False, True])
def test_a_security_protocol_is_checked_against_the_dev_stacks_broker_alike(
    tmp_path: Path, exported: bool
) -> None:
    """Found in dev.json or exported as its banner says, the stack's broker is one broker:
    a bad KAFKA_SECURITY_PROTOCOL is refused, and so is one it does not speak."""
    _write_dev_file(tmp_path, broker_kind="kafka", broker_profile="standard")
    env = {"GOAICORE_DATA_DIR": str(tmp_path)}
    if exported:
        env["KAFKA_BOOTSTRAP_SERVERS"] = "127.0.0.1:1111"
    with pytest.raises(ConfigError) as bogus:
        Settings(env={**env, "KAFKA_SECURITY_PROTOCOL": "BOGUS"})
    assert str(bogus.value).startswith("KAFKA_SECURITY_PROTOCOL='BOGUS': must be one of")
    with pytest.raises(ConfigError) as other:
        Settings(env={**env, **sasl_env()})
    assert str(other.value).startswith(
        "KAFKA_SECURITY_PROTOCOL=SASL_PLAINTEXT, but the broker is the dev stack's own"
    )
    assert PASSWORD not in str(other.value)


def test_the_cli_stops_on_a_bad_security_protocol_beside_a_dev_stack(tmp_path: Path) -> None:
    _write_dev_file(tmp_path, broker_kind="embedded", broker_profile="embedded")
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("KAFKA_")},
        "GOAICORE_DATA_DIR": str(tmp_path),
        "KAFKA_SECURITY_PROTOCOL": "BOGUS",
    }
    result = subprocess.run(
        [sys.executable, "-m", "goaicore", "create-topics"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 3
    assert result.stderr.startswith("goaicore: KAFKA_SECURITY_PROTOCOL='BOGUS': must be one of")
    assert result.stderr.count("\n") == 1


def test_an_external_broker_of_the_dev_stack_keeps_the_security_settings(tmp_path: Path) -> None:
    _write_dev_file(tmp_path, broker_kind="external", broker_profile="standard")
    settings = Settings(env={**sasl_env(), "GOAICORE_DATA_DIR": str(tmp_path)})
    assert settings.bootstrap_servers == "127.0.0.1:1111"
    assert settings.security_protocol == "SASL_PLAINTEXT"


def test_broker_refusals_become_one_line_without_the_password(tmp_path: Path) -> None:
    settings = Settings(env=sasl_env(), data_dir=tmp_path, bootstrap_servers="k:9092")
    refused = aiokafka_errors.SaslAuthenticationFailed(
        f"Authentication failed for alice ({PASSWORD})"
    )
    line = security_problem(settings, "k:9092", refused)
    assert line is not None
    assert line.startswith(
        "authentication failed with Kafka at k:9092 (SASL_PLAINTEXT, SCRAM-SHA-256 as user "
        "'alice'): "
    )
    assert PASSWORD not in line
    assert "***" in line
    tls = aiokafka_errors.KafkaConnectionError("Connection at k:9092 closed")
    tls.__cause__ = ssl.SSLError(
        1, "[SSL: SSLV3_ALERT_BAD_CERTIFICATE] sslv3 alert bad certificate"
    )
    line = security_problem(settings, "k:9092", tls)
    assert line is not None
    assert line.startswith("TLS handshake with Kafka at k:9092")
    assert "alert bad certificate" in line
    assert security_problem(settings, "k:9092", ConnectionRefusedError(111, "refused")) is None


def test_cli_stops_with_one_line_on_a_bad_security_setting(tmp_path: Path) -> None:
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("KAFKA_", "GOAICORE_"))},
        "GOAICORE_DATA_DIR": str(tmp_path),
        "KAFKA_BOOTSTRAP_SERVERS": "127.0.0.1:9092",
        "KAFKA_SECURITY_PROTOCOL": "SASL_SSL",
        "KAFKA_SASL_PASSWORD": PASSWORD,
    }
    result = subprocess.run(
        [sys.executable, "-m", "goaicore", "create-topics"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 3  # a configuration error
    assert result.stderr == (
        "goaicore: KAFKA_SASL_USERNAME is not set: KAFKA_SECURITY_PROTOCOL=SASL_SSL needs "
        "KAFKA_SASL_USERNAME and KAFKA_SASL_PASSWORD\n"
    )
    assert PASSWORD not in result.stdout + result.stderr


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("postgresql://u:s3cret@h:5432/db", "postgresql://u:***@h:5432/db"),
        ("postgresql://u@h/db", "postgresql://u@h/db"),
        (
            "postgresql://h/db?password=s3cret&sslmode=require",
            "postgresql://h/db?password=***&sslmode=require",
        ),
        ("host=h password=s3cret dbname=x", "host=h password=*** dbname=x"),
        ("host=h password='s3 cret' dbname=x", "host=h password=*** dbname=x"),
    ],
)
def test_a_database_url_is_shown_without_its_password(url: str, shown: str) -> None:
    from goaicore.config import mask_password

    assert mask_password(url) == shown
