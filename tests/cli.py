"""Run the ``goaicore`` command line as a user would: a child process, its output captured."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping

from goaicore.config import Settings


def run_goaicore(
    *args: str, env: Mapping[str, str], timeout: float = 120.0
) -> subprocess.CompletedProcess[str]:
    """``python -m goaicore ARGS`` with exactly ``env``; text output, never raising on exit."""
    return subprocess.run(
        [sys.executable, "-m", "goaicore", *args],
        env=dict(env),
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def goaicore(
    settings: Settings, *args: str, timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    """``python -m goaicore ARGS`` on ``settings``' broker and topics (no database)."""
    return run_goaicore(*args, env=goaicore_env(settings), timeout=timeout)


def goaicore_env(settings: Settings) -> dict[str, str]:
    """The environment of a ``goaicore`` child on ``settings``' broker and topics (no database)."""
    return {
        **{k: v for k, v in os.environ.items() if k != "DATABASE_URL"},
        "KAFKA_BOOTSTRAP_SERVERS": settings.require_bootstrap(),
        "GOAICORE_BROKER_PROFILE": settings.broker_profile or "standard",
        "GOAICORE_TOPIC_PREFIX": settings.topic_prefix,
        "GOAICORE_PARTITIONS": str(settings.partitions),
        "GOAICORE_DATA_DIR": str(settings.data_dir),
    }
