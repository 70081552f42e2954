"""The SDK's compaction hook on GoaicoreSession: a goaicore compactor shortens what
get_items returns with a CompactionApplied event (whole tool steps, a reasoning item
with its call), the log keeping every item; the SDK's runner calls it after a model
response."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest
from agents import Agent, Runner, set_tracing_disabled
from agents.models.openai_responses import OpenAIResponsesModel
from openai import AsyncOpenAI

from goaicore.config import Settings
from goaicore.conversation.compaction import KeepLastExchanges, MessageCount, TriggeredCompactor
from goaicore.integrations.openai_agents import GoaicoreSession
from goaicore.store.kafka import KafkaConversationStore
from goaicore.store.memory import InMemoryConversationStore
from goaicore.store.port import ConversationStore
from goaicore.sync import on_private_loop
from goaicore.testing import ResponsesServer

NOTE = "Earlier turns were left out."


@pytest.fixture(params=["memory", pytest.param("kafka", marks=pytest.mark.integration)])
async def store(request: pytest.FixtureRequest) -> AsyncIterator[ConversationStore]:
    opened: ConversationStore
    if request.param == "memory":
        opened = InMemoryConversationStore()
    else:
        settings: Settings = request.getfixturevalue("kafka_deployment")
        opened = KafkaConversationStore(settings, source="openai-agents")
    yield opened
    await on_private_loop(opened.close())


def keep_last(exchanges: int, over: int) -> TriggeredCompactor:
    return TriggeredCompactor(KeepLastExchanges(exchanges, note=NOTE), MessageCount(over))


def exchange(tag: str) -> list[Any]:
    return [
        {"content": f"roll {tag}", "role": "user"},
        {"id": f"rs_{tag}", "summary": [], "type": "reasoning", "encrypted_content": "enc"},
        {"arguments": "{}", "call_id": f"call_{tag}", "name": "roll", "type": "function_call"},
        {"call_id": f"call_{tag}", "output": "4", "type": "function_call_output"},
        {"role": "assistant", "content": f"{tag}: you rolled 4"},
    ]


def named() -> str:
    return f"agents-compact-{uuid.uuid4().hex[:8]}"


async def test_run_compaction_keeps_the_last_exchanges_and_every_event(
    store: ConversationStore,
) -> None:
    session = GoaicoreSession(named(), store, compactor=keep_last(1, over=6))
    for tag in ("a", "b", "c"):
        first, *step = exchange(tag)
        await session.add_items([first])
        await session.add_items(step)
    await session.run_compaction()
    assert await session.get_items() == [{"role": "system", "content": NOTE}, *exchange("c")]
    await session.run_compaction()  # under the trigger now: nothing more
    assert len(await session.get_items()) == 6
    logged = await on_private_loop(store.read(session.conversation_id, snapshot=False))
    kinds = [type(e.event.body).__name__ for e in logged.events]
    assert kinds.count("CompactionApplied") == 1
    assert kinds.count("UserMessage") == 3  # the log keeps what the history left out
    await session.aclose()


async def test_without_a_compactor_the_hook_does_nothing(store: ConversationStore) -> None:
    session = GoaicoreSession(named(), store)
    await session.add_items(exchange("a"))
    await session.run_compaction({"response_id": "resp_1"})
    assert await session.get_items() == exchange("a")
    await session.aclose()


async def test_the_runner_compacts_after_a_response(store: ConversationStore) -> None:
    set_tracing_disabled(True)
    session = GoaicoreSession(named(), store, compactor=keep_last(1, over=3))
    with ResponsesServer() as server:
        for text in ("First.", "Second.", "Third."):
            server.reply(text)
        client = AsyncOpenAI(base_url=server.base_url, api_key="test", max_retries=0)
        model = OpenAIResponsesModel(model="gpt-test", openai_client=client)
        agent = Agent(name="narrator", instructions="Be brief.", model=model)
        try:
            for question in ("one?", "two?", "three?"):
                await Runner.run(agent, question, session=session)
        finally:
            await client.close()
        bodies = [b for b in server.bodies if isinstance(b, dict)]
    third = bodies[-1]["input"]
    assert third[0] == {"role": "system", "content": NOTE}  # compacted after turn two
    assert [i.get("content") for i in third[1:]][-1] == "three?"
    items: list[Any] = await session.get_items()
    assert items[0] == {"role": "system", "content": NOTE}
    assert items[-1]["role"] == "assistant"
    await session.aclose()
