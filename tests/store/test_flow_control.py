"""Resuming flow clears the agents' queues only when flow was suspended."""

from __future__ import annotations

import asyncio

from mode.utils.queues import FlowControlQueue

from goaicore.config import Settings
from goaicore.kafka.faust.flow_control import SteadyFlowControl
from goaicore_store import create_app


def _queued(flow: SteadyFlowControl) -> FlowControlQueue[str]:
    queue: FlowControlQueue[str] = FlowControlQueue(flow_control=flow, clear_on_resume=True)
    queue.put_nowait("fetched for this assignment")
    return queue


def test_a_repeated_resume_keeps_what_is_queued() -> None:
    async def run() -> None:
        flow = SteadyFlowControl()
        flow.resume()  # recovery starts
        queue = _queued(flow)
        flow.resume()  # streams resumed after the seek: the record must survive
        assert flow.is_active()
        assert queue.qsize() == 1

    asyncio.run(run())


def test_a_resume_after_a_suspend_clears_the_queues() -> None:
    async def run() -> None:
        flow = SteadyFlowControl()
        flow.resume()
        queue = _queued(flow)
        flow.suspend()  # a rebalance revokes the partitions
        assert not flow.is_active()
        flow.resume()
        assert queue.qsize() == 0
        await asyncio.wait_for(flow.acquire(), 1)

    asyncio.run(run())


def test_the_store_app_uses_it(settings: Settings) -> None:
    store = create_app(settings)
    assert isinstance(store.app.flow_control, SteadyFlowControl)
