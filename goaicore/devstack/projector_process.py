"""Run ``goaicore projector`` as a child process (for the dev stack)."""

from __future__ import annotations

import sys

from goaicore.devstack.worker_process import WorkerProcess, settings_env


class ProjectorProcess(WorkerProcess):
    """A projector child process; with ``web_port``, its /metrics and /health are there."""

    def command(self) -> list[str]:
        command = [sys.executable, "-m", "goaicore", "projector"]
        if self.web_port:
            command += ["--http-port", str(self.web_port)]
        return command

    def environment(self) -> dict[str, str]:
        return {**settings_env(self.settings), "GOAICORE_DB_SCHEMA": self.settings.db_schema}
