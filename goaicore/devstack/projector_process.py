"""Run ``goaicore projector`` as a child process (for the dev stack)."""

from __future__ import annotations

import subprocess
import sys

from goaicore.devstack.worker_process import WorkerProcess, settings_env


class ProjectorProcess(WorkerProcess):
    """A projector child process; its output goes to a log file."""

    def start(self) -> ProjectorProcess:
        """Start it; with ``web_port``, its /metrics and /health are served there."""
        command = [sys.executable, "-m", "goaicore", "projector"]
        if self.web_port:
            command += ["--http-port", str(self.web_port)]
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
