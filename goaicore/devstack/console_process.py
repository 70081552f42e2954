"""Run ``goaicore console`` as a child process (for the dev stack)."""

from __future__ import annotations

import sys

from goaicore.devstack.projector_process import ProjectorProcess


class ConsoleProcess(ProjectorProcess):
    """The auditor's console on loopback, reading the projector's schema."""

    def command(self) -> list[str]:
        command = [sys.executable, "-m", "goaicore", "console", "--host", "127.0.0.1"]
        if self.web_port:
            command += ["--port", str(self.web_port)]
        return command
