"""A local broker process: started in its own process group, probed over the Kafka protocol.

Shared by the embedded broker and the local Apache Kafka nodes: each starts one
process group with its output in a log file, and stops that group (and only
that group) with SIGTERM, then SIGKILL after a grace period.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO

from goaicore.errors import BrokerError
from goaicore.kafka.probe import kafka_api_versions_error
from goaicore.parent_death import end_with_parent
from goaicore.stopping import Pause


class BrokerStartError(BrokerError, RuntimeError):
    """A local broker did not start or did not answer in time."""


class BrokerProcess:
    """One command run as its own process group, its output appended to ``log_path``."""

    def __init__(
        self,
        command: Sequence[str],
        log_path: Path | None,
        cwd: Path | None = None,
        with_parent: bool = False,
    ):
        """``with_parent``: the process gets SIGTERM when its parent dies (Linux), so an
        owner that is killed leaves nothing running."""
        self.command = list(command)
        self.log_path = log_path
        self.cwd = cwd
        self.with_parent = with_parent
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process else None

    def start(self, env: Mapping[str, str] | None = None) -> None:
        with contextlib.ExitStack() as stack:
            log: IO[bytes] | int = (
                stack.enter_context(open(self.log_path, "ab"))
                if self.log_path
                else subprocess.DEVNULL
            )
            self._process = subprocess.Popen(
                self.command,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
                preexec_fn=end_with_parent() if self.with_parent else None,
                cwd=self.cwd,
                env=dict(env) if env is not None else None,
            )

    def exit_code(self) -> int | None:
        """None while running (or never started), else the exit code."""
        return self._process.poll() if self._process else None

    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def terminate(self) -> None:
        """SIGTERM the group without waiting."""
        if self._process is not None and self._process.poll() is None:
            signal_group(self._process.pid, signal.SIGTERM)

    def stop(self, grace: float = 10.0) -> None:
        """SIGTERM the group, SIGKILL it after ``grace`` seconds; a no-op when not running."""
        process, self._process = self._process, None
        if process is None:
            return
        if process.poll() is None:
            signal_group(process.pid, signal.SIGTERM)
            try:
                process.wait(grace)
            except subprocess.TimeoutExpired:
                signal_group(process.pid, signal.SIGKILL)
                process.wait(grace)
        signal_group(process.pid, signal.SIGKILL)  # anything the leader left behind

    def kill(self) -> None:
        """SIGKILL the group at once, as a crash would."""
        process, self._process = self._process, None
        if process is not None:
            signal_group(process.pid, signal.SIGKILL)
            process.wait(30)

    def log_tail(self, chars: int = 3000) -> str:
        if self.log_path is None:
            return ""
        try:
            return self.log_path.read_text(errors="replace")[-chars:]
        except OSError:
            return ""


class BrokerExited(BrokerStartError):
    """The broker process exited while starting."""

    def __init__(self, code: int) -> None:
        super().__init__(f"exited with code {code}")
        self.code = code


def wait_answering(
    process: BrokerProcess,
    host: str,
    port: int,
    deadline: float,
    interval: float = 0.05,
    pause: Pause = time.sleep,
) -> str:
    """Poll host:port with ApiVersions until it answers ("") or ``deadline`` (the last error).

    Raises :class:`BrokerExited` as soon as the process is gone: no wait for a dead broker.
    ``pause`` sleeps between the tries (a ``Stopping.pause`` ends the wait on a stop).
    """
    last = "no answer yet"
    while time.monotonic() < deadline:
        code = process.exit_code()
        if code is not None:
            raise BrokerExited(code)
        last = kafka_api_versions_error(host, port, timeout=1.0) or ""
        if not last:
            return ""
        pause(interval)
    return last


def signal_group(pid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, sig)
