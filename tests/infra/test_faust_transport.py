"""goaicore's Faust transport: a fetch filters with the partitions it started with."""

from __future__ import annotations

import asyncio
from typing import Any

import faust
from faust.types import TP

from goaicore.kafka.faust import register
from goaicore.kafka.faust.embedded import EmbeddedConsumer
from goaicore.kafka.faust.transport import SteadyConsumer

EVENTS = TP("events", 0)
CHANGELOG = TP("snapshots", 0)


class PausingWhileFetching(SteadyConsumer):
    """Stands in for the aiokafka thread: recovery pauses its partitions mid-fetch."""

    asked: list[Any]
    slept: list[Any]

    async def sleep(self, n: Any, *args: Any, **kwargs: Any) -> None:
        self.slept.append(n)

    async def _getmany(self, active_partitions: Any, timeout: float) -> Any:  # noqa: ASYNC109
        self.asked.append(active_partitions)
        self.pause_partitions([CHANGELOG])  # table recovery is done meanwhile
        return {tp: [f"record of {tp.topic}"] for tp in active_partitions}


def _consumer(active: set[TP]) -> PausingWhileFetching:
    register()
    app = faust.App("transport-test", broker="goaicore-kafka://127.0.0.1:9")
    consumer = PausingWhileFetching(
        app.transport,
        callback=lambda message: None,
        on_partitions_revoked=lambda revoked: None,
        on_partitions_assigned=lambda assigned: None,
    )
    consumer.asked = []
    consumer.slept = []
    consumer._set_active_tps(active)
    consumer.resume_flow()
    return consumer


def test_records_are_filtered_with_the_partitions_the_fetch_started_with() -> None:
    async def run() -> None:
        consumer = _consumer({CHANGELOG})
        records, active = await consumer._wait_next_records(0.1)
        assert consumer._get_active_partitions() == set()  # the live set changed...
        assert active == {CHANGELOG}  # ...the fetch's own copy did not
        assert set(records) <= active

    asyncio.run(run())


def test_nothing_active_fetches_nothing() -> None:
    async def run() -> None:
        consumer = _consumer(set())
        records, active = await consumer._wait_next_records(0.1)
        # An empty set would make aiokafka return every assigned partition.
        assert consumer.asked == []
        assert consumer.slept == [1]  # and waits a little before asking again
        assert records == {}
        assert active == frozenset()

    asyncio.run(run())


def test_every_profile_uses_it() -> None:
    assert issubclass(EmbeddedConsumer, SteadyConsumer)
