"""The conformance suite against the in-memory store, sealed and not."""

from __future__ import annotations

import asyncio

import pytest

from goaicore.records import UserMessage
from goaicore.store.memory import InMemoryConversationStore
from goaicore.testing.conformance import CHECK_NAMES, check_named, check_store, run_check


@pytest.mark.parametrize("name", CHECK_NAMES)
async def test_the_memory_store_keeps_its_promises(name: str) -> None:
    await run_check(lambda: InMemoryConversationStore(partitions=3), check_named(name))


@pytest.mark.parametrize("name", CHECK_NAMES)
async def test_the_sealed_memory_store_keeps_its_promises(name: str) -> None:
    await run_check(lambda: InMemoryConversationStore(sealed=True), check_named(name))


async def test_one_call_runs_every_check_and_reports() -> None:
    report = await check_store(InMemoryConversationStore)
    assert report.ok, report.failed
    assert report.passed == list(CHECK_NAMES)


async def test_a_wait_for_the_snapshot_wakes_with_each_write_until_it_is_ready() -> None:
    store = InMemoryConversationStore()
    twice = lambda s: s is not None and s.event_count == 2  # noqa: E731
    waiting = asyncio.ensure_future(store.memory.snapshot_when("c", twice, 30))
    await store.append("c", UserMessage(text="one"))
    await asyncio.sleep(0)
    assert not waiting.done()
    await store.append("c", UserMessage(text="two"))
    snapshot = await waiting
    assert snapshot is not None
    assert snapshot.event_count == 2
    never = await store.memory.snapshot_when("c", lambda s: False, 0.01)
    assert never == snapshot  # not ready when its time ran out: the latest, as it is
