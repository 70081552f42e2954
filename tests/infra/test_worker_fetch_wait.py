"""The store worker's consumer waits briefly for a fetch to find records.

Why (a worker with a backlog stood idle while its one fetch in flight waited on
partitions with nothing new) is in ``goaicore.kafka.faust.transport``.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from goaicore.config import Settings


@pytest.mark.parametrize(("profile", "wait_ms"), [("standard", 100), ("embedded", 20)])
def test_the_store_workers_consumer_waits_briefly_for_records(
    settings: Settings, profile: str, wait_ms: int
) -> None:
    from goaicore_store.app import create_app

    store = create_app(settings.with_overrides(broker_profile=profile))

    async def fetch_wait() -> Any:
        faust_consumer: Any = store.app.consumer
        thread = faust_consumer._new_consumer_thread()
        consumer = thread._create_worker_consumer(store.app.transport)
        try:
            return consumer._fetch_max_wait_ms
        finally:
            await consumer.stop()  # never started: only releases what it holds

    assert asyncio.run(fetch_wait()) == wait_ms
