"""``goaicore projector``: project until SIGINT or SIGTERM, then close cleanly."""

from __future__ import annotations

import logging
import signal

from goaicore import logs, tracing
from goaicore.kafka.topics import ensure_topics
from goaicore.projection.projector import DEFAULT_BATCH, Projector
from goaicore.settings import Settings
from goaicore.stopping import Stopping
from goaicore_projector.observe import ProjectorMetrics, StatusServer

log = logging.getLogger(__name__)


def main(
    batch_size: int = DEFAULT_BATCH,
    crash_after_write_before_commit: int | None = None,
    http_port: int | None = None,
    http_host: str = "127.0.0.1",
) -> int:
    """Run one projector for the configured topic prefix and schema; the exit code.

    With ``http_port``, ``/metrics`` and ``/health`` are served there.
    """
    settings = Settings()
    logs.configure(logging.INFO, settings.log_format)
    tracing.setup_from_environment("goaicore-projector")
    ensure_topics(settings)
    stop = Stopping()  # asked without a lock: a handler's Event.set could wait on main
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.request())
    metrics = ProjectorMetrics()
    projector = Projector(
        settings,
        batch_size=batch_size,
        crash_after_write_before_commit=crash_after_write_before_commit,
        on_batch=metrics.batch_written,
    )
    server = None
    if http_port is not None:
        server = StatusServer(metrics, lambda: projector.state, http_host, http_port).start()
        log.info("metrics and health on http://%s:%d", http_host, server.port)
    try:
        projector.start(stop)
        projector.run(stop, after_step=metrics.stepped)
    finally:
        projector.close()
        if server is not None:
            server.close()
    return 0
