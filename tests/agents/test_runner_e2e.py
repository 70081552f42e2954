"""The Agents SDK's Runner over a session, end to end on the local Responses API server.

The sessions: the SDK's SQLiteSession in memory, and GoaicoreSession over the in-memory
store and over Apache Kafka (a store worker folding). A goaicore session's conversation
holds the turns as UserMessage, AssistantTurn and ToolResult events whose raw JSON is
the items the session gives back, byte for byte.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass

import pytest
from agents import SQLiteSession
from agents.items import TResponseInputItem
from agents.memory import Session

from goaicore.config import Settings
from goaicore.integrations.openai_agents import SOURCE, GoaicoreSession
from goaicore.records import AssistantTurn, ToolResult, UserMessage
from goaicore.store.kafka import KafkaConversationStore
from goaicore.store.memory import InMemoryConversationStore
from goaicore.store.port import ConversationStore
from goaicore.sync import on_private_loop
from goaicore.testing.agents_runner import (
    ANSWER,
    FOLLOW_UP,
    AgentTurnsFailure,
    RunMode,
    check_agent_turns,
    digest,
)

SESSIONS = [
    pytest.param("sqlite-memory", id="sqlite-memory"),
    pytest.param("goaicore-memory", id="goaicore-memory"),
    pytest.param("goaicore-kafka", id="goaicore-kafka", marks=pytest.mark.integration),
]
MODES = [
    pytest.param(("run", "run"), id="run"),
    pytest.param(("run_streamed", "run_streamed"), id="run_streamed"),
    pytest.param(("run_streamed", "run"), id="streamed-then-run"),
    pytest.param(("run", "run_streamed"), id="run-then-streamed"),
]


@dataclass
class Opened:
    session: Session
    store: ConversationStore | None = None
    """A goaicore session's store, where its conversation's events are read."""


@pytest.fixture(params=SESSIONS)
async def opened(request: pytest.FixtureRequest) -> AsyncIterator[Opened]:
    if request.param == "sqlite-memory":
        sqlite = SQLiteSession("e2e")
        yield Opened(sqlite)
        sqlite.close()
        return
    if request.param == "goaicore-memory":
        store: ConversationStore = InMemoryConversationStore()
    else:
        deployment: Settings = request.getfixturevalue("kafka_deployment")
        store = KafkaConversationStore(deployment, source=SOURCE)
    session = GoaicoreSession(f"e2e-{uuid.uuid4().hex[:10]}", store)
    try:
        yield Opened(session, store)
    finally:
        await session.aclose()
        await on_private_loop(store.close())


@pytest.mark.parametrize("modes", MODES)
async def test_two_turns_with_a_tool_over_the_session(
    opened: Opened, modes: tuple[RunMode, RunMode]
) -> None:
    report = await check_agent_turns(opened.session, modes=modes)

    assert report.final_outputs == [ANSWER, FOLLOW_UP]
    assert len(report.requests) == 3
    for deltas, mode in zip(report.deltas, modes, strict=True):
        assert (len(deltas) > 1) == (mode == "run_streamed")
    turn_2_input = report.requests[2]["input"]
    assert [item.get("type", "message") for item in turn_2_input] == [
        "message",
        "function_call",
        "function_call_output",
        "message",
        "message",
    ]
    assert [item.get("role") for item in turn_2_input] == ["user", None, None, "assistant", "user"]
    assert turn_2_input[:4] == report.items[:4]
    assert len(report.items) == 6
    if opened.store is not None:
        assert isinstance(opened.session, GoaicoreSession)
        await _check_the_log(opened.store, opened.session.conversation_id, report.items)


async def _check_the_log(
    store: ConversationStore, conversation_id: str, items: list[TResponseInputItem]
) -> None:
    """The conversation's events are the turns' items, each event's raw JSON the JSON of
    its items as ``get_items`` returns them: a user message, the model's function call,
    the tool's output, the model's answer; the next user message, the model's answer."""
    logged = await on_private_loop(store.read(conversation_id, snapshot=False))
    bodies = [entry.event.body for entry in logged.events]
    kinds = [type(body) for body in bodies]
    assert kinds == [
        UserMessage,
        AssistantTurn,
        ToolResult,
        AssistantTurn,
        UserMessage,
        AssistantTurn,
    ]
    assert {entry.event.source for entry in logged.events} == {SOURCE}
    at = 0
    for body in bodies:
        assert isinstance(body, UserMessage | AssistantTurn | ToolResult)
        assert body.raw_json is not None
        if isinstance(body, AssistantTurn):
            count = len(json.loads(body.raw_json)["output"])
            expected = json.dumps({"output": items[at : at + count]}, ensure_ascii=False)
        else:
            count = 1
            expected = json.dumps(items[at], ensure_ascii=False)
        assert body.raw_json == expected
        at += count
    assert at == len(items)
    call, result = bodies[1], bodies[2]  # the neutral view beside the raw items
    assert isinstance(call, AssistantTurn)
    assert isinstance(result, ToolResult)
    assert [(c.id, c.name) for c in call.tool_calls] == [(result.tool_call_id, "get_score")]
    assert result.name == "get_score"


async def test_a_session_that_forgets_is_named() -> None:
    class Forgetful(SQLiteSession):
        async def get_items(self, limit: int | None = None) -> list[TResponseInputItem]:
            return []

    with pytest.raises(AgentTurnsFailure, match="request 3's input was"):
        await check_agent_turns(Forgetful("forgetful"))


def test_digest_reads_what_an_item_says() -> None:
    assert digest({"role": "user", "content": "hi"}) == ("message", "user", "hi")
    assert digest(
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "a"}]}
    ) == ("message", "assistant", "a")
    assert digest(
        {"type": "function_call", "call_id": "c", "name": "f", "arguments": '{"x": 1}'}
    ) == ("function_call", "c", "f", {"x": 1})
    assert digest({"type": "function_call_output", "call_id": "c", "output": "o"}) == (
        "function_call_output",
        "c",
        "o",
    )
