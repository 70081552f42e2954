"""Run ``goaicore projector`` as a child process (for the dev stack)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from goaicore.config import Settings
from goaicore.devstack.worker_process import WorkerProcess, settings_env


class ProjectorProcess(WorkerProcess):
    """A projector child process; its output goes to a log file."""

    def __init__(self, settings: Settings, log_path: Path) -> None:
        super().__init__(settings, log_path)

    def start(self) -> ProjectorProcess:
        command = [sys.executable, "-m", "goaicore", "projector"]
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
