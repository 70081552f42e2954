"""``goaicore projector`` stops on SIGTERM, projecting or waiting as a standby."""

from __future__ import annotations

import time

from goaicore.config import Settings
from tests.projector.helpers import ProjectorProcess


def _wait_logged(projector: ProjectorProcess, text: str, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while text not in projector.log():
        assert projector.process is not None
        assert projector.process.poll() is None, projector.log()
        assert time.monotonic() < deadline, projector.log()
        time.sleep(0.1)


def test_sigterm_stops_a_standby_and_the_projector_it_waits_behind(projection: Settings) -> None:
    active = ProjectorProcess(projection, name="active").start()
    standby = ProjectorProcess(projection, name="standby")
    try:
        _wait_logged(active, "projecting ")
        standby.start()
        _wait_logged(standby, "another projector writes schema")
        assert standby.stop() == 0, standby.log()
        assert active.stop() == 0, active.log()
    finally:
        standby.stop()
        active.stop()
    assert "projecting " not in standby.log()
