"""``goaicore worker``: the store worker as a Faust worker process."""

from __future__ import annotations

import gc
import logging

from goaicore import logs, tracing
from goaicore.http_auth import check_http_exposure
from goaicore.kafka.faust.worker import QuietWorker
from goaicore.kafka.topics import ensure_topics
from goaicore.settings import Settings
from goaicore_store.app import create_app
from goaicore_store.chat.tools import DEFAULT_TOOLS

log = logging.getLogger(__name__)

# The table holds every conversation's snapshot: long-lived objects that Python's
# collector, at its default young threshold (700), scanned again and again. A worker
# folding 50,000 events into 50 conversations of 1,000 spent 0.31-0.49 s in 7 full
# collections (44-70 ms each); at 20,000 none ran while it folded, and its rate on
# those conversations went from 0.54-0.70x to 0.80-0.98x its rate on short ones
# (Apache Kafka, 2 cores). Garbage in cycles waits a little longer to be collected.
YOUNG_GC_THRESHOLD = 20_000


def main(
    web_port: int | None = None,
    web_host: str = "127.0.0.1",
    canonical_url: str | None = None,
    loglevel: str = "info",
    insecure_http: bool = False,
) -> int:
    """Create the topics if needed and run the store worker until it is stopped."""
    settings = Settings()
    if settings.tools is None:  # its own tools, named in the first line like any others
        settings = settings.with_overrides(tools=DEFAULT_TOOLS)
    gc.set_threshold(YOUNG_GC_THRESHOLD, *gc.get_threshold()[1:])
    # What this worker runs with, secrets masked or left out: the first line of its log.
    print(logs.line(__name__, f"goaicore worker: {settings!r}", settings.log_format), flush=True)
    check_http_exposure(settings, web_host, insecure_http)
    tracing.setup_from_environment("goaicore-worker")
    ensure_topics(settings)
    store = create_app(settings, web_port=web_port, web_host=web_host, canonical_url=canonical_url)
    # Plain text keeps Faust's own formatting (its tables of partitions and offsets).
    as_json = settings.log_format == "json"
    worker = QuietWorker(
        store.app,
        loglevel=loglevel,
        logging_config=logs.logging_config(loglevel.upper(), "json", "stdout") if as_json else None,
    )
    worker.execute_from_commandline()
    return 0
