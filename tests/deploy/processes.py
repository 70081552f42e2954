"""goaicore processes as a deployment runs them: wildcard bind, explicit canonical URL."""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
import time
import urllib.error
import urllib.request
from typing import Any

from goaicore.config import Settings
from goaicore.devstack.worker_process import settings_env
from goaicore.net import free_loopback_port
from tests.store.workers import StoreWorker


def deployed_env(settings: Settings) -> dict[str, str]:
    """A child's environment as compose or Kubernetes sets it (with the projection schema)."""
    return {
        **settings_env(settings),
        "GOAICORE_DB_SCHEMA": settings.db_schema,
        "GOAICORE_REPLICATION_FACTOR": str(settings.replication_factor),
    }


def goaicore(
    settings: Settings, *args: str, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    """Run one ``goaicore`` command to completion."""
    return subprocess.run(
        [sys.executable, "-m", "goaicore", *args],
        env=deployed_env(settings),
        capture_output=True,
        text=True,
        timeout=timeout,
    )


# The bearer token a deployed worker accepts (deployed workers listen on 0.0.0.0).
TOKEN = "deployed-token-0123456789abcdef"


def get(url: str) -> tuple[int, Any]:
    """Status and JSON body of a GET with the deployed token, errors included."""
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {TOKEN}"})
    try:
        with urllib.request.urlopen(request, timeout=5) as answer:
            return answer.status, json.loads(answer.read())
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read())


class WebWorker(StoreWorker):
    """``goaicore worker`` started with the flags of deploy/: ``--web-host 0.0.0.0``."""

    def __init__(self, settings: Settings, name: str = "web-worker") -> None:
        super().__init__(settings, name)
        self.port = free_loopback_port()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> WebWorker:
        port = str(self.port)
        command = [sys.executable, "-m", "goaicore", "worker", "--loglevel", "info"]
        command += ["--web-port", port, "--web-host", "0.0.0.0"]
        command += ["--canonical-url", f"http://127.0.0.1:{port}"]
        with open(self.log_path, "ab") as log:
            self.process = subprocess.Popen(
                command,
                env={**deployed_env(self.settings), "GOAICORE_HTTP_TOKENS": TOKEN},
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        return self

    def wait_ready(self, timeout: float) -> list[tuple[int, Any]]:
        """Poll ``/ready`` until 200; every answer seen, in order."""
        seen: list[tuple[int, Any]] = []
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            assert self.alive(), f"worker exited:\n{self.log()[-4000:]}"
            with contextlib.suppress(urllib.error.URLError, ConnectionError):
                seen.append(get(f"{self.url}/ready"))
            if seen and seen[-1][0] == 200:
                return seen
            time.sleep(0.25)
        raise AssertionError(f"not ready in {timeout:.0f} s: {seen[-3:]}\n{self.log()[-4000:]}")
