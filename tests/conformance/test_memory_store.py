"""The conformance suite against the in-memory store, sealed and not."""

from __future__ import annotations

import pytest

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
