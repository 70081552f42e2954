"""``goaicore worker``: the store worker as a Faust worker process."""

from __future__ import annotations

from goaicore.config import Settings
from goaicore.kafka.faust.worker import QuietWorker
from goaicore.kafka.topics import ensure_topics
from goaicore_store.app import create_app


def main(
    web_port: int | None = None,
    web_host: str = "127.0.0.1",
    canonical_url: str | None = None,
    loglevel: str = "info",
) -> int:
    """Create the topics if needed and run the store worker until it is stopped."""
    settings = Settings()
    ensure_topics(settings)
    store = create_app(settings, web_port=web_port, web_host=web_host, canonical_url=canonical_url)
    QuietWorker(store.app, loglevel=loglevel).execute_from_commandline()
    return 0
