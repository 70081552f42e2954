"""Run ``goaicore worker`` as a child process with a given configuration."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Self

from goaicore.parent_death import end_with_parent
from goaicore.settings import FIELD_VARIABLES, LOADER_VARIABLES, Settings

SETTINGS_VARIABLES = frozenset(FIELD_VARIABLES.values())


def settings_env(settings: Settings) -> dict[str, str]:
    """This process's environment with goaicore's variables replaced by ``settings``'.

    Every resolved setting is passed (``Settings.environment``), so a child process
    runs with exactly the configuration the parent resolved; the variables read
    where they are used (the schemas folder, the Kafka jars' cache) pass through.
    """
    env = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith(("KAFKA_", "GOAICORE_")) and name not in SETTINGS_VARIABLES
    }
    env.update({name: os.environ[name] for name in LOADER_VARIABLES if name in os.environ})
    env.update(settings.environment())
    return env


class WorkerProcess:
    """A store worker child process; its output goes to a log file."""

    def __init__(self, settings: Settings, log_path: Path, web_port: int | None = None) -> None:
        self.settings = settings
        self.log_path = log_path
        self.web_port = web_port
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process else None

    def command(self) -> list[str]:
        command = [sys.executable, "-m", "goaicore", "worker", "--loglevel", "info"]
        if self.web_port:
            command += ["--web-port", str(self.web_port)]
        return command

    def environment(self) -> dict[str, str]:
        return settings_env(self.settings)

    def start(self) -> Self:
        with open(self.log_path, "ab") as log:
            self.process = subprocess.Popen(
                self.command(),
                env=self.environment(),
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                preexec_fn=end_with_parent(),  # gone with the stack, even if it is killed
            )
        return self

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def stop(self, timeout: float = 60.0) -> None:
        process, self.process = self.process, None
        if process is None or process.poll() is not None:
            return
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout)
