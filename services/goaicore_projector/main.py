"""``goaicore projector``: project until SIGINT or SIGTERM, then close cleanly."""

from __future__ import annotations

import logging
import signal
import threading

from goaicore.config import Settings
from goaicore.kafka.topics import ensure_topics
from goaicore.projection.projector import DEFAULT_BATCH, Projector


def main(
    batch_size: int = DEFAULT_BATCH, crash_after_write_before_commit: int | None = None
) -> int:
    """Run one projector for the configured topic prefix and schema; the exit code."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s %(message)s")
    settings = Settings()
    ensure_topics(settings)
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    projector = Projector(
        settings,
        batch_size=batch_size,
        crash_after_write_before_commit=crash_after_write_before_commit,
    )
    try:
        projector.start(stop)
        projector.run(stop)
    finally:
        projector.close()
    return 0
