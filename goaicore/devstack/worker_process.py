"""Run ``goaicore worker`` as a child process with a given configuration."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from goaicore.config import Settings


def settings_env(settings: Settings) -> dict[str, str]:
    """This process's environment with goaicore's variables set from ``settings``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("KAFKA_", "GOAICORE_"))}
    env.pop("DATABASE_URL", None)
    env.update(
        KAFKA_BOOTSTRAP_SERVERS=settings.require_bootstrap(),
        GOAICORE_BROKER_PROFILE=settings.broker_profile,
        GOAICORE_TOPIC_PREFIX=settings.topic_prefix,
        GOAICORE_PARTITIONS=str(settings.partitions),
        GOAICORE_DATA_DIR=str(settings.data_dir),
        GOAICORE_TABLE_STORE=settings.table_store,
    )
    if settings.database_url:
        env["DATABASE_URL"] = settings.database_url
    env.update(security_env(settings))
    return env


def security_env(settings: Settings) -> dict[str, str]:
    """The KAFKA_SECURITY_PROTOCOL, KAFKA_SASL_* and KAFKA_SSL_* variables of ``settings``."""
    from goaicore.kafka.security import uses_sasl, uses_ssl

    env: dict[str, str] = {"KAFKA_SECURITY_PROTOCOL": settings.security_protocol or "PLAINTEXT"}
    values: dict[str, str | None] = {}
    if uses_sasl(settings):
        values.update(
            KAFKA_SASL_MECHANISM=settings.sasl_mechanism,
            KAFKA_SASL_USERNAME=settings.sasl_username,
            KAFKA_SASL_PASSWORD=settings.sasl_password,
        )
    if uses_ssl(settings):
        values.update(
            KAFKA_SSL_CAFILE=settings.ssl_cafile,
            KAFKA_SSL_CERTFILE=settings.ssl_certfile,
            KAFKA_SSL_KEYFILE=settings.ssl_keyfile,
            KAFKA_SSL_KEY_PASSWORD=settings.ssl_key_password,
        )
    env.update({name: value for name, value in values.items() if value})
    return env


class WorkerProcess:
    """A store worker child process; its output goes to a log file."""

    def __init__(self, settings: Settings, log_path: Path, web_port: int | None = None) -> None:
        self.settings = settings
        self.log_path = log_path
        self.web_port = web_port
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process else None

    def start(self) -> WorkerProcess:
        command = [sys.executable, "-m", "goaicore", "worker", "--loglevel", "info"]
        if self.web_port:
            command += ["--web-port", str(self.web_port)]
        with open(self.log_path, "ab") as log:
            self.process = subprocess.Popen(
                command,
                env=settings_env(self.settings),
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
            )
        return self

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def stop(self, timeout: float = 60.0) -> None:
        process, self.process = self.process, None
        if process is None or process.poll() is not None:
            return
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout)
