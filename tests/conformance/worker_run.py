"""A store worker that holds its own in-worker store to the conformance suite.

Run as ``python -m tests.conformance.worker_run REPORT`` with a worker's environment:
it starts the store worker as ``goaicore worker`` does, waits until the worker owns its
partitions, runs every check against ``worker_store(...)`` (the store the worker's HTTP
views use) from inside the worker's own event loop, writes the report to REPORT as
JSON, and stops.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from pathlib import Path

from goaicore.config import Settings
from goaicore.kafka.faust.worker import QuietWorker
from goaicore.kafka.topics import ensure_topics
from goaicore.testing.conformance import check_store
from goaicore_store.app import create_app
from goaicore_store.http import readiness
from goaicore_store.port import worker_store

READY_TIMEOUT = 120.0


def main(report_path: Path) -> None:
    settings = Settings()
    ensure_topics(settings)
    store = create_app(settings)

    async def hold_to_the_suite() -> None:
        try:
            deadline = asyncio.get_running_loop().time() + READY_TIMEOUT
            while readiness(store.app) is not None:
                if asyncio.get_running_loop().time() > deadline:
                    raise RuntimeError(f"not ready: {readiness(store.app)}")
                await asyncio.sleep(0.2)
            report = await check_store(lambda: worker_store(store))
            result = {"passed": report.passed, "failed": report.failed}
        except Exception as err:  # the test reads why
            result = {"passed": [], "failed": {"worker": f"{type(err).__name__}: {err}"}}
        await asyncio.to_thread(report_path.write_text, json.dumps(result))
        os.kill(os.getpid(), signal.SIGTERM)

    store.app.task(hold_to_the_suite)
    QuietWorker(store.app, loglevel="info").execute_from_commandline()


if __name__ == "__main__":
    main(Path(sys.argv[1]))
