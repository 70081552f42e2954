"""Run ``goaicore console`` as a child process (for the dev stack)."""

from __future__ import annotations

import subprocess
import sys

from goaicore.devstack.worker_process import WorkerProcess, settings_env


class ConsoleProcess(WorkerProcess):
    """The auditor's console as a child process, on loopback; its output goes to a log."""

    def start(self) -> ConsoleProcess:
        command = [sys.executable, "-m", "goaicore", "console", "--host", "127.0.0.1"]
        if self.web_port:
            command += ["--port", str(self.web_port)]
        env = {**settings_env(self.settings), "GOAICORE_DB_SCHEMA": self.settings.db_schema}
        with open(self.log_path, "ab") as log:
            self.process = subprocess.Popen(
                command,
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
            )
        return self
